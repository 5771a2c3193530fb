package io.chatintake.work;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
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
 * - to: "telegram:bots?..."          # the action
 * - bean: { ref: effectGuard, method: complete }
 * </pre>
 * The effect key is the exchange's {@code IdempotencyKey} plus {@code EffectName} (default
 * {@code effect}). Done before: the rest of the route is skipped. Started but never recorded done
 * (the process died in between): not repeated automatically; the item is parked for a person to
 * reconcile, unless the route sets {@code EffectIdempotentDownstream=true} because the remote side
 * deduplicates by the key itself.
 */
public final class EffectGuard {
    private static final Logger LOG = LoggerFactory.getLogger(EffectGuard.class);
    public static final String EFFECT_NAME = "EffectName";
    public static final String IDEMPOTENT_DOWNSTREAM = "EffectIdempotentDownstream";
    public static final String EFFECT_KEY = "EffectKey";

    private final DataSource dataSource;

    public EffectGuard(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /** The action may have happened and nobody knows: a person must look before it is repeated. */
    public static final class UnconfirmedEffectException extends Exception {
        UnconfirmedEffectException(String key) {
            super("effect " + key + " was started but never recorded done (a crash in between?); not repeated: reconcile it");
        }
    }

    public void begin(Exchange exchange) throws SQLException, UnconfirmedEffectException {
        Message message = exchange.getMessage();
        String key = effectKey(message);
        message.setHeader(EFFECT_KEY, key);
        try (Connection c = dataSource.getConnection()) {
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO outbound_effect (effect_key, work_item_id, state)"
                    + " VALUES (?, ?, 'started') ON CONFLICT (effect_key) DO NOTHING")) {
                ps.setString(1, key);
                ps.setObject(2, message.getHeader(WorkDispatcher.WORK_ITEM_ID, Long.class));
                if (ps.executeUpdate() == 1) {
                    return;
                }
            }
            String state = state(c, key);
            if ("done".equals(state)) {
                LOG.info("effect {} already done; not repeating it", key);
                exchange.setRouteStop(true);
            } else if (!message.getHeader(IDEMPOTENT_DOWNSTREAM, false, Boolean.class)) {
                throw new UnconfirmedEffectException(key);
            }
        }
    }

    public void complete(Exchange exchange) throws SQLException {
        String key = exchange.getMessage().getHeader(EFFECT_KEY, String.class);
        if (key == null) {
            throw new IllegalStateException("effectGuard.complete without effectGuard.begin earlier in the route");
        }
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
                "UPDATE outbound_effect SET state = 'done', done_at = now() WHERE effect_key = ?")) {
            ps.setString(1, key);
            ps.executeUpdate();
        }
    }

    private static String effectKey(Message message) {
        String idempotencyKey = message.getHeader(WorkDispatcher.IDEMPOTENCY_KEY, String.class);
        if (idempotencyKey == null || idempotencyKey.isBlank()) {
            throw new IllegalStateException("effectGuard needs the IdempotencyKey header that stored work carries");
        }
        return idempotencyKey + ":" + message.getHeader(EFFECT_NAME, "effect", String.class);
    }

    private static String state(Connection c, String key) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT state FROM outbound_effect WHERE effect_key = ?")) {
            ps.setString(1, key);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }
}
