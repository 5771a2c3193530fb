package io.chatintake.channel.webhook;

import io.chatintake.message.ChannelMessageStore;
import io.chatintake.message.ChildMessageListener;
import io.chatintake.work.WorkQueue;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * Stores the verified events of one delivery and, for message events, their child messages, in
 * one transaction, each new event with its work item. Returning from {@link #store} means
 * committed: only then may the caller answer 2xx. Every statement is bounded
 * ({@code statement_timeout} on the server, a socket timeout on the client), so a slow or
 * vanished database turns into an exception, never a hung request.
 */
public final class WebhookEventStore implements WebhookEventSink {
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
            RETURNING id, (xmax = 0) AS inserted
            """;

    /**
     * Transactions in flight at once, each holding the deliveries that arrived while the others ran.
     * Two: one still goes on while the other waits (a lock, a slow fsync), and bigger groups cost
     * fewer commits: bench webhook at 16 clients took 1,210-1,280/s with 2, 1,180/s with 4 and
     * 870-910/s with 8 on 2 cores.
     */
    private static final int COMMITTERS = 2;
    private static final int MAX_GROUP = 32;

    private final GroupCommit<Written> commits;
    private final String workspace;
    private final String channel;
    private final String workKind;
    private final ChildMessageListener childListener;

    /** @param workKind the kind of work item each new event becomes */
    public WebhookEventStore(DataSource dataSource, Duration statementTimeout, String workspace, String channel, String workKind,
                             ChildMessageListener childListener) {
        this.commits = new GroupCommit<>(dataSource, statementTimeout, COMMITTERS, MAX_GROUP, this::scheduleAll);
        this.workspace = workspace;
        this.channel = channel;
        this.workKind = workKind;
        this.childListener = childListener;
    }

    @Override
    public List<Stored> store(Delivery delivery, List<WebhookEvent> events) throws SQLException {
        return store(events);
    }

    /** What one delivery wrote, and what its transaction still has to write for it before the commit. */
    private record Written(List<Stored> stored, List<ChildMessageListener.StoredChild> children, List<WorkQueue.NewWork> work) {
    }

    /**
     * The one transaction of a delivery: every event, its child, the child's listeners, its work
     * item. Deliveries arriving together share it ({@link GroupCommit}); returning means committed.
     */
    public List<Stored> store(List<WebhookEvent> events) throws SQLException {
        return commits.submit(connection -> write(connection, events)).stored();
    }

    private Written write(Connection connection, List<WebhookEvent> events) throws SQLException {
        List<Stored> result = new ArrayList<>(events.size());
        List<ChildMessageListener.StoredChild> children = new ArrayList<>();
        List<WorkQueue.NewWork> work = new ArrayList<>();
        for (WebhookEvent event : events) {
            Stored stored = insertEvent(connection, event);
            result.add(stored);
            // A redelivery was applied and scheduled when it was first stored; applying it again
            // could undo a newer change, scheduling it again would run its business work twice.
            if (stored.firstDelivery()) {
                if (event.message() != null) {
                    ChannelMessageStore.Applied child = ChannelMessageStore.apply(connection, workspace, event.eventId(),
                            event.occurredAt(), event.message(), event.change());
                    children.add(ChildMessageListener.StoredChild.of(child));
                }
                work.add(new WorkQueue.NewWork(workKind, String.join(":", workspace, channel, event.eventId()),
                        stored.id(), event.chatKey(workspace)));
            }
        }
        return new Written(result, children, work);
    }

    /**
     * For all deliveries of the transaction at once: attachments, downloads and albums commit with
     * their children (albums rule 8), and the work items, whose chats' lanes are locked in one
     * statement in one order.
     */
    private void scheduleAll(Connection connection, List<Written> deliveries) throws SQLException {
        childListener.stored(connection, deliveries.stream().flatMap(d -> d.children().stream()).toList());
        WorkQueue.schedule(connection, deliveries.stream().flatMap(d -> d.work().stream()).toList());
    }

    private Stored insertEvent(Connection connection, WebhookEvent event) throws SQLException {
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
                return new Stored(rs.getLong("id"), rs.getBoolean("inserted"));
            }
        }
    }
}
