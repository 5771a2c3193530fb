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
import java.sql.Types;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;

/**
 * Stores a verified webhook event and, for message.* events, its child message, in one
 * transaction. Returning from {@link #store} means committed: only then may the caller answer 2xx.
 * Deliveries arriving together share that transaction ({@link GroupCommit}: one commit for the
 * burst; a failing delivery fails alone). Every statement is bounded ({@code statement_timeout}
 * on the server, a socket timeout on the client), so a slow or vanished database turns into an
 * exception, never a hung request.
 */
public final class WebhookEventStore implements AutoCloseable {
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

    /**
     * Transactions in flight at once, each holding the deliveries that arrived while the others ran.
     * A delivery costs a few round trips inside its group, so groups run side by side; 8 leaves
     * half of the default pool (chat-intake.db.pool-size=16) to polling and the work dispatcher.
     */
    private static final int COMMITTERS = 8;
    private static final int MAX_GROUP = 32;

    private final GroupCommit commits;
    private final String workKind;
    private final ChildMessageListener childListener;

    /** Whether this delivery stored the event or found it stored already. */
    public record Stored(long id, boolean firstDelivery, int deliveryCount) {
    }

    /** @param workKind the kind of work item each new event becomes */
    public WebhookEventStore(DataSource dataSource, Duration statementTimeout, String workKind, ChildMessageListener childListener) {
        this.commits = new GroupCommit(dataSource, statementTimeout, COMMITTERS, MAX_GROUP);
        this.workKind = workKind;
        this.childListener = childListener;
    }

    public Stored store(String workspace, String channel, UnifyPortEvent event) throws SQLException {
        return commits.submit(connection -> store(connection, workspace, channel, event));
    }

    /** Refuses further deliveries; those already queued are still committed. */
    @Override
    public void close() {
        commits.close();
    }

    /** One delivery in the given transaction (which deliveries arriving together share, see {@link GroupCommit}). */
    private Stored store(Connection connection, String workspace, String channel, UnifyPortEvent event) throws SQLException {
        Stored stored = insertEvent(connection, workspace, channel, event);
        // A redelivery was applied and scheduled when it was first stored; applying it again
        // could undo a newer change, scheduling it again would run its business work twice.
        if (stored.firstDelivery()) {
            if (event.message() != null) {
                ChannelMessageStore.Applied child = ChannelMessageStore.apply(connection, workspace, event.eventId(),
                        event.occurredAt(), event.message(), ChannelMessage.Change.of(event.type()));
                // Its attachments, downloads and album commit with the child (albums rule 8).
                childListener.stored(connection, List.of(new ChildMessageListener.StoredChild(child.id(), child.inserted())));
            }
            schedule(connection, workspace, channel, event, stored.id());
        }
        return stored;
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

}
