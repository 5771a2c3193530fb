package io.chatintake.work;

import io.chatintake.support.CrashPoint;
import io.chatintake.support.Redactor;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.Optional;
import javax.sql.DataSource;
import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Wraps an external action (a reply, a CRM call) in a route so that receiving or running
 * something twice never performs it twice (seed 004: "after an external action, before recording
 * completion" needs an idempotency key or reconciliation). In YAML:
 * <pre>
 * - bean: { ref: effectGuard, method: begin }
 * - to: "telegram-bot:main"          # the action
 * - bean: { ref: effectGuard, method: complete }
 * </pre>
 * The effect key is the exchange's {@code IdempotencyKey} plus {@code EffectName} (default
 * {@code effect}). The ledger ({@code outbound_effect}) holds one row per effect:
 * <ul>
 * <li>{@code done}: performed, with its result; the rest of the route is skipped if it runs again;</li>
 * <li>{@code failed}: definitely not performed; the next attempt performs it;</li>
 * <li>{@code undeliverable}: refused for good; never tried again, the item ends done;</li>
 * <li>{@code started} and never settled (a crash, or an {@link EffectOutcome#AMBIGUOUS ambiguous}
 * failure): not repeated automatically; the item is parked for a person
 * ({@code work resolve-effect}), unless the route sets {@code EffectIdempotentDownstream=true}
 * because the remote side deduplicates by the key itself.</li>
 * </ul>
 * Components that know what happened throw {@link EffectFailure}; for any other system the route
 * sets the {@value EffectOutcome#HEADER} header before {@code complete}.
 */
public final class EffectGuard {
    private static final Logger LOG = LoggerFactory.getLogger(EffectGuard.class);
    public static final String EFFECT_NAME = "EffectName";
    public static final String IDEMPOTENT_DOWNSTREAM = "EffectIdempotentDownstream";
    public static final String EFFECT_KEY = "EffectKey";
    /** Acceptance tests halt the JVM here: the action happened, its record did not. */
    public static final String CRASH_AFTER_ACTION = "effect.after-action";
    private static final int MAX_TEXT = 1000;

    private final DataSource dataSource;

    public EffectGuard(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /** The action may have happened and nobody knows: a person must look before it is repeated. */
    public static final class UnconfirmedEffectException extends Exception {
        UnconfirmedEffectException(String key) {
            super("effect " + key + " was started but never recorded done (a crash in between?); not repeated:"
                    + " reconcile it with work resolve-effect " + key + " --performed|--not-performed");
        }
    }

    public void begin(Exchange exchange) throws SQLException, UnconfirmedEffectException {
        Message message = exchange.getMessage();
        String key = effectKey(message);
        message.setHeader(EFFECT_KEY, key);
        try (Connection c = dataSource.getConnection()) {
            // New, or provably not performed before: this attempt performs it.
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO outbound_effect (effect_key, work_item_id, state)"
                    + " VALUES (?, ?, 'started') ON CONFLICT (effect_key) DO UPDATE SET state = 'started', started_at = now(),"
                    + " result = NULL WHERE outbound_effect.state = 'failed'")) {
                ps.setString(1, key);
                ps.setObject(2, message.getHeader(WorkDispatcher.WORK_ITEM_ID, Long.class));
                if (ps.executeUpdate() == 1) {
                    return;
                }
            }
            String state = state(c, key).orElse("");
            if ("done".equals(state) || "undeliverable".equals(state)) {
                LOG.info("effect {} already settled ({}); not repeating it", key, state);
                exchange.setRouteStop(true);
            } else if (!message.getHeader(IDEMPOTENT_DOWNSTREAM, false, Boolean.class)) {
                throw new UnconfirmedEffectException(key);
            }
        }
    }

    /**
     * Records the action as performed, with the body as its result (e.g. the message id), unless
     * the route set {@value EffectOutcome#HEADER} to another outcome: then that is thrown as an
     * {@link EffectFailure} for the dispatcher to record.
     */
    public void complete(Exchange exchange) throws SQLException, EffectFailure {
        Message message = exchange.getMessage();
        String key = message.getHeader(EFFECT_KEY, String.class);
        if (key == null) {
            throw new IllegalStateException("effectGuard.complete without effectGuard.begin earlier in the route");
        }
        CrashPoint.reach(CRASH_AFTER_ACTION);
        String declared = message.getHeader(EffectOutcome.HEADER, String.class);
        EffectOutcome outcome = declared == null || declared.isBlank() ? EffectOutcome.PERFORMED : EffectOutcome.parse(declared);
        if (outcome != EffectOutcome.PERFORMED) {
            Long retryAfter = message.getHeader(EffectOutcome.RETRY_AFTER_HEADER, Long.class);
            throw new EffectFailure(outcome, "the route declared effect " + key + " " + outcome.label(),
                    retryAfter == null ? null : Instant.now().plusSeconds(retryAfter));
        }
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
                "UPDATE outbound_effect SET state = 'done', done_at = now(), result = ? WHERE effect_key = ?")) {
            ps.setString(1, text(message.getBody(String.class)));
            ps.setString(2, key);
            ps.executeUpdate();
        }
    }

    /**
     * Records a failed action of this exchange, if it went through {@link #begin}: failed (the next
     * attempt performs it) or undeliverable; an ambiguous one stays started, with what is known.
     * @return false when the exchange holds no started effect
     */
    public boolean settle(Exchange exchange, EffectFailure failure) throws SQLException {
        String key = exchange.getMessage().getHeader(EFFECT_KEY, String.class);
        if (key == null) {
            return false;
        }
        String state = switch (failure.outcome()) {
            case FAILED -> "failed";
            case UNDELIVERABLE -> "undeliverable";
            default -> "started";
        };
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
                "UPDATE outbound_effect SET state = ?, result = ?, done_at = CASE WHEN ? = 'undeliverable' THEN now() END"
                        + " WHERE effect_key = ? AND state = 'started'")) {
            ps.setString(1, state);
            ps.setString(2, text(failure.getMessage()));
            ps.setString(3, state);
            ps.setString(4, key);
            return ps.executeUpdate() == 1;
        }
    }

    /** An effect left started, as a person decided after looking: performed (done) or not (failed, so it runs again). */
    public record Resolved(String key, Long workItemId) {
    }

    public Optional<Resolved> resolve(String key, boolean performed, String by) throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
                "UPDATE outbound_effect SET state = ?, done_at = CASE WHEN ? THEN now() END, resolved_by = ?, resolved_at = now()"
                        + " WHERE effect_key = ? AND state = 'started' RETURNING work_item_id")) {
            ps.setString(1, performed ? "done" : "failed");
            ps.setBoolean(2, performed);
            ps.setString(3, by);
            ps.setString(4, key);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(new Resolved(key, (Long) rs.getObject(1))) : Optional.empty();
            }
        }
    }

    private static String effectKey(Message message) {
        String idempotencyKey = message.getHeader(WorkDispatcher.IDEMPOTENCY_KEY, String.class);
        if (idempotencyKey == null || idempotencyKey.isBlank()) {
            throw new IllegalStateException("effectGuard needs the IdempotencyKey header that stored work carries");
        }
        return idempotencyKey + ":" + message.getHeader(EFFECT_NAME, "effect", String.class);
    }

    private static Optional<String> state(Connection c, String key) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT state FROM outbound_effect WHERE effect_key = ?")) {
            ps.setString(1, key);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(rs.getString(1)) : Optional.empty();
            }
        }
    }

    /** Stored texts are short and pass the redactor. */
    private static String text(String text) {
        return Redactor.redact(text, MAX_TEXT);
    }
}
