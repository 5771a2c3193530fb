package io.chatintake.ops.bench;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;

/**
 * {@code bench webhook}'s reference (not judged): the three rows the webhook contract was once
 * taken to commit before its 2xx, written the plain way: the event, its child message and its
 * work item, three {@code INSERT}s and one
 * {@code COMMIT} a delivery, on one JDBC connection. Into copies of the runner's tables (same
 * columns, defaults and indexes, in schema public) so that the runner's handlers never see them.
 */
final class ContractRows implements AutoCloseable {
    private static final String EVENT = """
            INSERT INTO public.bench_webhook_event (workspace, channel, event_id, first_delivery_id, last_delivery_id, event_type,
                                                    provider, account_id, occurred_at, body, payload)
            VALUES ('default', 'unifyport', ?, ?, ?, 'message.received', 'whatsapp', 'acc_bench', ?, ?, CAST(? AS jsonb))
            RETURNING id""";
    private static final String CHILD = """
            INSERT INTO public.bench_channel_message (workspace, provider, account_id, conversation_id, message_id, message_type, text,
                                                      sent_at, first_event_id, last_event_at)
            VALUES ('default', 'whatsapp', 'acc_bench', ?, ?, 'text', ?, ?, ?, ?)""";
    private static final String WORK = """
            INSERT INTO public.bench_work_item (kind, source_key, source_id, chat_key) VALUES ('unifyport-event', ?, ?, ?)""";

    private final Connection connection;
    private final PreparedStatement event;
    private final PreparedStatement child;
    private final PreparedStatement work;

    ContractRows(Connection connection) throws SQLException {
        this.connection = connection;
        connection.setAutoCommit(false);
        this.event = connection.prepareStatement(EVENT);
        this.child = connection.prepareStatement(CHILD);
        this.work = connection.prepareStatement(WORK);
    }

    static void create(BenchDatabase database) throws SQLException {
        for (String table : new String[] {"webhook_event", "channel_message", "work_item"}) {
            database.execute("CREATE TABLE public.bench_" + table + " (LIKE chat_intake." + table + " INCLUDING ALL)");
        }
    }

    /** One delivery's rows, committed. */
    void write(String eventId, byte[] body) throws SQLException {
        Timestamp now = Timestamp.from(Instant.now());
        String conversation = "c" + Math.abs(eventId.hashCode() % 50);
        long eventRow;
        event.setString(1, eventId);
        event.setString(2, "dlv_" + eventId);
        event.setString(3, "dlv_" + eventId);
        event.setTimestamp(4, now);
        event.setBytes(5, body);
        event.setString(6, new String(body, StandardCharsets.UTF_8));
        try (ResultSet rs = event.executeQuery()) {
            rs.next();
            eventRow = rs.getLong(1);
        }
        child.setString(1, conversation);
        child.setString(2, eventId);
        child.setString(3, "y".repeat(800));
        child.setTimestamp(4, now);
        child.setString(5, eventId);
        child.setTimestamp(6, now);
        child.executeUpdate();
        work.setString(1, "unifyport:" + eventId);
        work.setLong(2, eventRow);
        work.setString(3, "whatsapp/acc_bench/" + conversation);
        work.executeUpdate();
        connection.commit();
    }

    @Override
    public void close() throws SQLException {
        connection.rollback();
        connection.setAutoCommit(true);
        connection.close();
    }
}
