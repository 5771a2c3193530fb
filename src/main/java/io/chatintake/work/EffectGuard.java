package io.chatintake.work;

import io.chatintake.support.FormerHeaderNames;
import io.chatintake.support.CrashPoint;
import io.chatintake.support.Redactor;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;
import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Wraps an external action (a reply, a CRM call) in a route so that receiving or running
 * something twice never performs it twice: a crash after the action and before its record
 * leaves something only an idempotency key or a person can reconcile. Routes use it as one step,
 * the {@link GuardedEffect} policy; routes written earlier call {@code begin} and {@code complete}
 * as bean steps around the action. The effect key is the exchange's {@code ChatIntakeWorkIdempotencyKey} plus
 * the effect's name (the policy's id; for the bean steps the {@code EffectName} header, default
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
 * sets the {@value EffectOutcome#HEADER} header (or the policy reads what was thrown).
 */
public final class EffectGuard {
    private static final Logger LOG = LoggerFactory.getLogger(EffectGuard.class);
    public static final String EFFECT_NAME = EffectConstants.NAME;
    public static final String IDEMPOTENT_DOWNSTREAM = EffectConstants.IDEMPOTENT_DOWNSTREAM;
    public static final String EFFECT_KEY = EffectConstants.KEY;
    /** Acceptance tests halt the JVM here: the action happened, its record did not. */
    public static final String CRASH_AFTER_ACTION = "effect.after-action";
    private static final int MAX_TEXT = 1000;

    private final DataSource dataSource;

    public EffectGuard(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /**
     * Exchange property: the {@link Settlement}s of this exchange's effects that could not be
     * written (the database was away). The work dispatcher writes them before the item's outcome,
     * as soon as the database is back, so an effect this process knows the outcome of is never
     * left "started" to be parked for reconciliation.
     */
    public static final String UNRECORDED = "EffectUnrecorded";

    /** What became of an effect, as outbound_effect records it (done, failed, undeliverable; started: ambiguous), with its result. */
    public record Settlement(String key, String state, String result) {
    }

    /** The action may have happened and nobody knows: a person must look before it is repeated. */
    public static final class UnconfirmedEffectException extends Exception {
        UnconfirmedEffectException(String key) {
            super("effect " + key + " was started but never recorded done (a crash in between?); not repeated:"
                    + " reconcile it with work resolve-effect " + key + " --performed|--not-performed");
        }
    }

    /** The old way, a bean step: an effect settled earlier stops the rest of the route. */
    public void begin(Exchange exchange) throws SQLException, UnconfirmedEffectException {
        String name = EffectConstants.read(exchange.getMessage(), EFFECT_NAME, String.class);
        if (open(exchange, name != null ? name : "effect").isPresent()) {
            exchange.setRouteStop(true);
        }
    }

    /**
     * Begins effect {@code name} of this exchange's item and sets {@value #EFFECT_KEY}.
     * @return empty when this attempt performs it; the earlier settlement (done or undeliverable,
     *         with its result) when it must not be performed again
     * (Not an overload of begin: the bean step's binding would find two methods.)
     */
    Optional<Settlement> open(Exchange exchange, String name) throws SQLException, UnconfirmedEffectException {
        Message message = exchange.getMessage();
        String key = effectKey(message, name);
        message.setHeader(EFFECT_KEY, key);
        message.setHeader(EffectConstants.FORMER_NAMES.get(EFFECT_KEY), key);
        try {
            return start(exchange, key);
        } catch (SQLException e) {
            // The action did not run. Should the start have committed all the same (the database
            // went away as it answered), it is settled failed once the database is back, so the
            // next attempt performs it instead of finding it "started but never recorded".
            keep(exchange, new Settlement(key, "failed", text("not performed: its start could not be recorded (" + e.getMessage() + ")")));
            throw e;
        }
    }

    private Optional<Settlement> start(Exchange exchange, String key) throws SQLException, UnconfirmedEffectException {
        Message message = exchange.getMessage();
        try (Connection c = dataSource.getConnection()) {
            // New, or provably not performed before: this attempt performs it.
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO outbound_effect (effect_key, work_item_id, state)"
                    + " VALUES (?, ?, 'started') ON CONFLICT (effect_key) DO UPDATE SET state = 'started', started_at = now(),"
                    + " result = NULL WHERE outbound_effect.state = 'failed'")) {
                ps.setString(1, key);
                ps.setObject(2, message.getHeader(WorkDispatcher.WORK_ITEM_ID, Long.class));
                if (ps.executeUpdate() == 1) {
                    return Optional.empty();
                }
            }
            Optional<Settlement> earlier = settlement(c, key);
            String state = earlier.map(Settlement::state).orElse("");
            if ("done".equals(state) || "undeliverable".equals(state)) {
                LOG.info("effect {} already settled ({}); not repeating it", key, state);
                return earlier;
            }
            if (!Boolean.TRUE.equals(EffectConstants.read(message, IDEMPOTENT_DOWNSTREAM, Boolean.class))) {
                throw new UnconfirmedEffectException(key);
            }
            return Optional.empty();
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
        String declared = EffectConstants.read(message, EffectOutcome.HEADER, String.class);
        EffectOutcome outcome = declared == null || declared.isBlank() ? EffectOutcome.PERFORMED : EffectOutcome.parse(declared);
        if (outcome != EffectOutcome.PERFORMED) {
            throw declaredFailure(message, key, outcome);
        }
        performed(exchange);
    }

    /** The failure a route declared with {@value EffectOutcome#HEADER} (and {@value EffectOutcome#RETRY_AFTER_HEADER}). */
    static EffectFailure declaredFailure(Message message, String key, EffectOutcome outcome) {
        Long retryAfter = EffectConstants.read(message, EffectOutcome.RETRY_AFTER_HEADER, Long.class);
        return new EffectFailure(outcome, "the route declared effect " + key + " " + outcome.label(),
                retryAfter == null ? null : Instant.now().plusSeconds(retryAfter));
    }

    /** Records the exchange's started effect as done, with the body as its result. */
    void performed(Exchange exchange) {
        Settlement done = new Settlement(exchange.getMessage().getHeader(EFFECT_KEY, String.class), "done",
                text(exchange.getMessage().getBody(String.class)));
        try {
            write(List.of(done));
        } catch (SQLException e) {
            // Performed all the same: the dispatcher writes it when the database is back.
            keep(exchange, done);
        }
    }

    /** Settlements kept by {@link #complete} or {@link #settle} because the database was away. */
    @SuppressWarnings("unchecked")
    public static List<Settlement> unrecorded(Exchange exchange) {
        List<Settlement> kept = exchange.getProperty(UNRECORDED, List.class);
        return kept == null ? List.of() : kept;
    }

    @SuppressWarnings("unchecked")
    private static void keep(Exchange exchange, Settlement settlement) {
        List<Settlement> kept = exchange.getProperty(UNRECORDED, List.class);
        if (kept == null) {
            kept = new ArrayList<>();
            exchange.setProperty(UNRECORDED, kept);
        }
        kept.add(settlement);
    }

    // Only an effect still started is settled: a person who resolved it meanwhile has the last word.
    private static final String SETTLE = """
            UPDATE outbound_effect e SET state = s.state, result = s.result,
                   done_at = CASE WHEN s.state IN ('done', 'undeliverable') THEN now() END
              FROM unnest(?::text[], ?::text[], ?::text[]) AS s(key, state, result)
             WHERE e.effect_key = s.key AND e.state = 'started'""";

    /** Writes settlements in one statement. */
    public void write(List<Settlement> settlements) throws SQLException {
        if (settlements.isEmpty()) {
            return;
        }
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(SETTLE)) {
            ps.setArray(1, c.createArrayOf("text", settlements.stream().map(Settlement::key).toArray()));
            ps.setArray(2, c.createArrayOf("text", settlements.stream().map(Settlement::state).toArray()));
            ps.setArray(3, c.createArrayOf("text", settlements.stream().map(Settlement::result).toArray()));
            ps.executeUpdate();
        }
    }

    /**
     * Records a failed action of this exchange, if it went through {@link #begin}: failed (the next
     * attempt performs it) or undeliverable; an ambiguous one stays started, with what is known.
     * While the database is away the settlement is kept with the exchange ({@link #UNRECORDED}).
     * @return false when the exchange holds no started effect to settle
     */
    public boolean settle(Exchange exchange, EffectFailure failure) {
        String key = exchange.getMessage().getHeader(EFFECT_KEY, String.class);
        if (key == null) {
            return false;
        }
        String state = switch (failure.outcome()) {
            case FAILED -> "failed";
            case UNDELIVERABLE -> "undeliverable";
            default -> "started";
        };
        Settlement settlement = new Settlement(key, state, text(failure.getMessage()));
        try {
            write(List.of(settlement));
        } catch (SQLException e) {
            keep(exchange, settlement);
        }
        return true;
    }

    /** An effect left started, as a person decided after looking: performed (done) or not (failed, so it runs again). */
    public record Resolved(String key, Long workItemId) {
    }

    public Optional<Resolved> resolve(String key, boolean performed, String by) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            return resolve(c, key, performed, by);
        }
    }

    /** The same inside the caller's transaction (an operator action committed with its audit row). */
    public static Optional<Resolved> resolve(Connection c, String key, boolean performed, String by) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
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

    private static String effectKey(Message message, String name) {
        String idempotencyKey = FormerHeaderNames.read(message, WorkConstants.IDEMPOTENCY_KEY,
                WorkConstants.FORMER_NAMES.get(WorkConstants.IDEMPOTENCY_KEY), String.class);
        if (idempotencyKey == null || idempotencyKey.isBlank()) {
            throw new IllegalStateException("a guarded effect needs the " + WorkConstants.IDEMPOTENCY_KEY + " header that stored work carries");
        }
        return idempotencyKey + ":" + name;
    }

    private static Optional<Settlement> settlement(Connection c, String key) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT state, result FROM outbound_effect WHERE effect_key = ?")) {
            ps.setString(1, key);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(new Settlement(key, rs.getString(1), rs.getString(2))) : Optional.empty();
            }
        }
    }

    /** Stored texts are short and pass the redactor. */
    private static String text(String text) {
        return Redactor.redact(text, MAX_TEXT);
    }
}
