package io.chatintake.channel.webhook;

import io.chatintake.channel.unifyport.UnifyPortEvent;
import io.chatintake.message.ChannelMessage;
import io.chatintake.message.ChannelMessageStore;
import io.chatintake.message.ChildMessageListener;
import io.chatintake.work.WorkQueue;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;

/**
 * Stores a verified webhook event and, for message.* events, its child message, in one
 * transaction. Returning from {@link #store} means committed: only then may the caller answer 2xx.
 * Every statement is bounded ({@code statement_timeout} on the server, a socket timeout on the
 * client), so a slow or vanished database turns into an exception, never a hung request.
 */
public final class WebhookEventStore {
    /**
     * (workspace, channel, event id) is the idempotency key: a redelivery only counts itself on
     * the existing row. {@code xmax = 0} tells a fresh insert from a conflict update.
     */
    private static final String INSERT_EVENT = """
            INSERT INTO webhook_event (workspace, channel, event_id, first_delivery_id, last_delivery_id,
                                       event_type, provider, account_id, occurred_at, body, payload, parse_error)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, CAST(? AS jsonb), ?)
            ON CONFLICT (workspace, channel, event_id) DO UPDATE
               SET delivery_count = webhook_event.delivery_count + 1,
                   last_delivery_id = EXCLUDED.last_delivery_id,
                   last_received_at = now()
            RETURNING id, (xmax = 0) AS inserted, delivery_count
            """;

    private final DataSource dataSource;
    private final Duration statementTimeout;
    private final String workKind;
    private final ChildMessageListener childListener;

    /** Whether this delivery stored the event or found it stored already. */
    public record Stored(long id, boolean firstDelivery, int deliveryCount) {
    }

    /** @param workKind the kind of work item each new event becomes */
    public WebhookEventStore(DataSource dataSource, Duration statementTimeout, String workKind, ChildMessageListener childListener) {
        this.dataSource = dataSource;
        this.statementTimeout = statementTimeout;
        this.workKind = workKind;
        this.childListener = childListener;
    }

    public Stored store(String workspace, String channel, UnifyPortEvent event) throws SQLException {
        try (Connection connection = dataSource.getConnection()) {
            // Client side too: statement_timeout cannot fire when the server is gone mid-request.
            connection.setNetworkTimeout(Runnable::run, (int) statementTimeout.multipliedBy(2).plusSeconds(1).toMillis());
            connection.setAutoCommit(false);
            try {
                try (Statement s = connection.createStatement()) {
                    s.execute("SET LOCAL statement_timeout = " + statementTimeout.toMillis());
                }
                Stored stored = insertEvent(connection, workspace, channel, event);
                // A redelivery was applied and scheduled when it was first stored; applying it again
                // could undo a newer change, scheduling it again would run its business work twice.
                if (stored.firstDelivery()) {
                    if (event.message() != null) {
                        ChannelMessageStore.Applied child = ChannelMessageStore.apply(connection, workspace, event.eventId(),
                                event.occurredAt(), event.message(), ChannelMessage.Change.of(event.type()));
                        // Its attachments, downloads and album commit with the child (albums rule 8).
                        childListener.stored(connection,
                                List.of(new ChildMessageListener.StoredChild(child.id(), child.inserted(), child.albumAssigned())));
                    }
                    schedule(connection, workspace, channel, event, stored.id());
                }
                connection.commit();
                return stored;
            } catch (SQLException | RuntimeException e) {
                rollbackQuietly(connection);
                throw e;
            }
        }
    }

    private static Stored insertEvent(Connection connection, String workspace, String channel, UnifyPortEvent event)
            throws SQLException {
        try (PreparedStatement ps = connection.prepareStatement(INSERT_EVENT)) {
            int i = 0;
            ps.setString(++i, workspace);
            ps.setString(++i, channel);
            ps.setString(++i, event.eventId());
            ps.setString(++i, event.deliveryId());
            ps.setString(++i, event.deliveryId());
            ps.setString(++i, event.type());
            ps.setString(++i, event.provider());
            ps.setString(++i, event.accountId());
            ps.setObject(++i, ChannelMessageStore.timestamp(event.occurredAt()), Types.TIMESTAMP_WITH_TIMEZONE);
            ps.setBytes(++i, event.body());
            ps.setString(++i, event.payloadJson());
            ps.setString(++i, event.parseError());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new Stored(rs.getLong("id"), rs.getBoolean("inserted"), rs.getInt("delivery_count"));
            }
        }
    }

    /** The event's business work, committed with the event: stored means scheduled. */
    private void schedule(Connection connection, String workspace, String channel, UnifyPortEvent event, long eventRowId)
            throws SQLException {
        ChannelMessage message = event.message();
        String chatKey = message == null ? null
                : String.join(":", workspace, message.provider(), message.accountId(), message.conversationId());
        WorkQueue.schedule(connection, List.of(new WorkQueue.NewWork(workKind, String.join(":", workspace, channel, event.eventId()),
                eventRowId, chatKey)));
    }

    private static void rollbackQuietly(Connection connection) {
        try {
            connection.rollback();
        } catch (SQLException e) {
            // The connection is broken; the transaction died with it, nothing was committed.
        }
    }
}
