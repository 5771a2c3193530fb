package io.chatintake.ops;

import static io.chatintake.store.Transactions.inTransaction;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * Operator alerts with a beginning and an end ({@code routes/OperatorAlerts.java}), kept in
 * PostgreSQL so that replicas agree and a restart resends nothing. A check tells {@link #observe}
 * every finding it sees now: one not open yet starts, an open one not seen any more ends. Then
 * {@link #next} gives the one message due for a destination, listing what started or ended since
 * its previous message, at most one per {@code minGap}; its id is the send's idempotency key, so
 * the effect guard sends it once whichever replica tries.
 */
public final class OperatorAlertLedger {
    /** A message longer than this is cut: Telegram takes 4096 characters. */
    private static final int MAX_TEXT = 3800;

    private final DataSource dataSource;

    public OperatorAlertLedger(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /** An alert message to send: {@code key} is its idempotency key. */
    public record Message(long id, String key, String text) {
    }

    /**
     * The findings seen now, as camel-sql gives the check's rows ({@code finding}, {@code text}); an
     * open one keeps its latest text (a count grown since it started is what its end says).
     * One replica at a time: a second one checking at the same moment skips this round.
     */
    public void observe(List<? extends Map<String, ?>> rows) throws SQLException {
        Map<String, String> seen = new LinkedHashMap<>();
        for (Map<String, ?> row : rows) {
            seen.putIfAbsent(String.valueOf(row.get("finding")), String.valueOf(row.get("text")));
        }
        inTransaction(dataSource, c -> {
            if (!lock(c, "operator-findings")) {
                return null;
            }
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO operator_finding (finding, text) VALUES (?, ?)"
                    + " ON CONFLICT (finding) WHERE cleared_at IS NULL DO UPDATE SET text = EXCLUDED.text WHERE operator_finding.text <> EXCLUDED.text")) {
                for (Map.Entry<String, String> finding : seen.entrySet()) {
                    ps.setString(1, finding.getKey());
                    ps.setString(2, finding.getValue());
                    ps.addBatch();
                }
                ps.executeBatch();
            }
            Array keys = c.createArrayOf("text", seen.keySet().toArray());
            try (PreparedStatement ps = c.prepareStatement(
                    "UPDATE operator_finding SET cleared_at = now() WHERE cleared_at IS NULL AND NOT (finding = ANY (?))")) {
                ps.setArray(1, keys);
                ps.executeUpdate();
            }
            return null;
        });
    }

    /**
     * The message due for {@code destination}: one composed earlier and not sent yet (the guard
     * then sends it at most once), else a new one listing every start and end not announced yet,
     * unless the previous message is younger than {@code minGap}.
     */
    public Optional<Message> next(String destination, Duration minGap) throws SQLException {
        return inTransaction(dataSource, c -> {
            if (!lock(c, "operator-alert:" + destination)) {
                return Optional.empty();
            }
            Optional<Message> unsent = unsent(c, destination);
            if (unsent.isPresent()) {
                return unsent;
            }
            if (recentlySent(c, destination, minGap)) {
                return Optional.empty();
            }
            return compose(c, destination);
        });
    }

    /** The send went through: the next message may follow after the gap. */
    public void sent(long messageId) throws SQLException {
        try (Connection c = dataSource.getConnection();
             PreparedStatement ps = c.prepareStatement("UPDATE operator_alert_message SET sent_at = now() WHERE id = ? AND sent_at IS NULL")) {
            ps.setLong(1, messageId);
            ps.executeUpdate();
        }
    }

    private static boolean lock(Connection c, String name) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_try_advisory_xact_lock(hashtext(?))")) {
            ps.setString(1, name);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }

    /**
     * A message composed and not marked sent: sent again while its effect is not settled; one the
     * guard settled (done, undeliverable) or left for a person (started: it may have arrived) is
     * not sent again.
     */
    private static Optional<Message> unsent(Connection c, String destination) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("""
                SELECT m.id, m.text, e.state FROM operator_alert_message m
                  LEFT JOIN outbound_effect e ON e.effect_key = 'operator-alert-message:' || m.id || ':operator-alert'
                 WHERE m.destination = ? AND m.sent_at IS NULL ORDER BY m.id LIMIT 1""")) {
            ps.setString(1, destination);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return Optional.empty();
                }
                long id = rs.getLong(1);
                String state = rs.getString(3);
                if (state == null || state.equals("failed")) {
                    return Optional.of(message(id, rs.getString(2)));
                }
                try (PreparedStatement done = c.prepareStatement("UPDATE operator_alert_message SET sent_at = now() WHERE id = ?")) {
                    done.setLong(1, id);
                    done.executeUpdate();
                }
                return Optional.empty();
            }
        }
    }

    private static boolean recentlySent(Connection c, String destination, Duration minGap) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT EXISTS (SELECT 1 FROM operator_alert_message WHERE destination = ?"
                + " AND created_at > now() - make_interval(secs => ?))")) {
            ps.setString(1, destination);
            ps.setDouble(2, minGap.toMillis() / 1000.0);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }

    private record Change(long id, boolean starts, boolean ends, String text, long minutes) {
    }

    private static Optional<Message> compose(Connection c, String destination) throws SQLException {
        List<Change> changes = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("""
                SELECT id, start_message_id IS NULL, cleared_at IS NOT NULL AND end_message_id IS NULL, text,
                       floor(extract(epoch FROM coalesce(cleared_at, now()) - started_at) / 60)::bigint
                  FROM operator_finding WHERE start_message_id IS NULL OR (cleared_at IS NOT NULL AND end_message_id IS NULL)
                 ORDER BY id FOR UPDATE""");
             ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                changes.add(new Change(rs.getLong(1), rs.getBoolean(2), rs.getBoolean(3), rs.getString(4), rs.getLong(5)));
            }
        }
        if (changes.isEmpty()) {
            return Optional.empty();
        }
        String text = text(changes);
        long id;
        try (PreparedStatement ps = c.prepareStatement(
                "INSERT INTO operator_alert_message (destination, text) VALUES (?, ?) RETURNING id")) {
            ps.setString(1, destination);
            ps.setString(2, text);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                id = rs.getLong(1);
            }
        }
        try (PreparedStatement ps = c.prepareStatement("UPDATE operator_finding SET"
                + " start_message_id = coalesce(start_message_id, ?), end_message_id = CASE WHEN cleared_at IS NULL THEN NULL ELSE ? END"
                + " WHERE id = ?")) {
            for (Change change : changes) {
                ps.setLong(1, id);
                ps.setLong(2, id);
                ps.setLong(3, change.id);
                ps.addBatch();
            }
            ps.executeBatch();
        }
        return Optional.of(message(id, text));
    }

    /** One line per change: what started, what is over (and after how long), what did both since the last message. */
    private static String text(List<Change> changes) {
        StringBuilder text = new StringBuilder();
        int listed = 0;
        for (Change change : changes) {
            String line = (change.starts && change.ends ? "STARTED AND OVER (" + change.minutes + " min): "
                    : change.starts ? "STARTED: " : "OVER after " + change.minutes + " min: ") + change.text;
            if (text.length() + line.length() + 1 > MAX_TEXT) {
                text.append("... and ").append(changes.size() - listed).append(" more: java -jar chat-intake.jar work status");
                break;
            }
            text.append(line).append('\n');
            listed++;
        }
        return text.toString().strip();
    }

    private static Message message(long id, String text) {
        return new Message(id, "operator-alert-message:" + id, text);
    }
}
