package io.chatintake.channel.webhook;

import io.chatintake.message.ChannelMessageStore;
import io.chatintake.message.ChildMessageListener;
import io.chatintake.store.SqlArrays;
import io.chatintake.store.UpsertRounds;
import io.chatintake.work.WorkQueue;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
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
     * the existing row. {@code xmax = 0} tells a fresh insert from a conflict update. The events
     * of a group go in one statement, one array per column, ids in the group's order.
     */
    private static final String INSERT_EVENTS = """
            INSERT INTO webhook_event (workspace, channel, event_id, first_delivery_id, last_delivery_id,
                                       event_type, provider, account_id, occurred_at, body, payload, parse_error)
            SELECT ?, ?, e.event_id, e.delivery_id, e.delivery_id,
                   e.event_type, e.provider, e.account_id, CAST(e.occurred_at AS timestamptz), e.body, CAST(e.payload AS jsonb), e.parse_error
              FROM unnest(CAST(? AS text[]), CAST(? AS text[]), CAST(? AS text[]), CAST(? AS text[]), CAST(? AS text[]),
                          CAST(? AS text[]), CAST(? AS bytea[]), CAST(? AS text[]), CAST(? AS text[]))
                   WITH ORDINALITY AS e(event_id, delivery_id, event_type, provider, account_id, occurred_at, body, payload, parse_error, n)
             ORDER BY e.n
            ON CONFLICT (workspace, channel, event_id) DO UPDATE
               SET delivery_count = webhook_event.delivery_count + 1,
                   last_delivery_id = EXCLUDED.last_delivery_id,
                   last_received_at = now()
            RETURNING event_id, id, (xmax = 0) AS inserted
            """;

    /**
     * Transactions in flight at once, each holding the deliveries that arrived while the others ran.
     * Two: one still goes on while the other waits (a lock, a slow fsync), and bigger groups cost
     * fewer commits: bench webhook at 16 clients took 1,210-1,280/s with 2, 1,180/s with 4 and
     * 870-910/s with 8 on 2 cores.
     */
    private static final int COMMITTERS = 2;
    private static final int MAX_GROUP = 32;

    private final GroupCommit<List<WebhookEvent>, List<Stored>> commits;
    private final String workspace;
    private final String channel;
    private final String workKind;
    private final ChildMessageListener childListener;

    /** @param workKind the kind of work item each new event becomes */
    public WebhookEventStore(DataSource dataSource, Duration statementTimeout, String workspace, String channel, String workKind,
                             ChildMessageListener childListener) {
        this.commits = new GroupCommit<>(dataSource, statementTimeout, COMMITTERS, MAX_GROUP, this::write);
        this.workspace = workspace;
        this.channel = channel;
        this.workKind = workKind;
        this.childListener = childListener;
    }

    @Override
    public List<Stored> store(Delivery delivery, List<WebhookEvent> events) throws SQLException {
        return store(events);
    }

    /**
     * The one transaction of a delivery: every event, its child, the child's listeners, its work
     * item. Deliveries arriving together share it ({@link GroupCommit}); returning means committed.
     */
    public List<Stored> store(List<WebhookEvent> events) throws SQLException {
        return commits.submit(events);
    }

    /**
     * The deliveries of one transaction, in a few statements for all of them: their events; the
     * children of the new ones; what the children's listeners write (attachments, downloads and
     * albums commit with their children); the new events' work items, whose chats' lanes are
     * locked in one statement in one order.
     */
    private List<List<Stored>> write(Connection connection, List<List<WebhookEvent>> deliveries) throws SQLException {
        List<WebhookEvent> events = deliveries.stream().flatMap(List::stream).toList();
        Stored[] stored = new Stored[events.size()];
        for (List<Integer> round : UpsertRounds.of(events, WebhookEvent::eventId)) {
            insertEvents(connection, events, round, stored);
        }
        // A redelivery was applied and scheduled when it was first stored; applying it again
        // could undo a newer change, scheduling it again would run its business work twice.
        List<ChannelMessageStore.MessageEvent> messageEvents = new ArrayList<>();
        List<WorkQueue.NewWork> work = new ArrayList<>();
        for (int i = 0; i < events.size(); i++) {
            WebhookEvent event = events.get(i);
            if (stored[i].firstDelivery()) {
                if (event.message() != null) {
                    messageEvents.add(new ChannelMessageStore.MessageEvent(event.eventId(), event.occurredAt(), event.message(),
                            event.change()));
                }
                work.add(new WorkQueue.NewWork(workKind, String.join(":", workspace, channel, event.eventId()),
                        stored[i].id(), event.chatKey(workspace)));
            }
        }
        childListener.stored(connection, ChannelMessageStore.applyAll(connection, workspace, messageEvents).stream()
                .map(ChildMessageListener.StoredChild::of).toList());
        WorkQueue.schedule(connection, work);
        List<List<Stored>> result = new ArrayList<>(deliveries.size());
        int next = 0;
        for (List<WebhookEvent> delivery : deliveries) {
            result.add(Arrays.asList(stored).subList(next, next + delivery.size()));
            next += delivery.size();
        }
        return result;
    }

    private void insertEvents(Connection connection, List<WebhookEvent> events, List<Integer> rows, Stored[] stored) throws SQLException {
        List<WebhookEvent> these = rows.stream().map(events::get).toList();
        try (PreparedStatement ps = connection.prepareStatement(INSERT_EVENTS)) {
            int i = 0;
            ps.setString(++i, workspace);
            ps.setString(++i, channel);
            ps.setArray(++i, SqlArrays.texts(connection, these, WebhookEvent::eventId));
            ps.setArray(++i, SqlArrays.texts(connection, these, WebhookEvent::deliveryId));
            ps.setArray(++i, SqlArrays.texts(connection, these, WebhookEvent::type));
            ps.setArray(++i, SqlArrays.texts(connection, these, WebhookEvent::provider));
            ps.setArray(++i, SqlArrays.texts(connection, these, WebhookEvent::accountId));
            ps.setArray(++i, SqlArrays.texts(connection, these, e -> SqlArrays.timestamp(e.occurredAt())));
            ps.setArray(++i, SqlArrays.bytes(connection, these, WebhookEvent::body));
            ps.setArray(++i, SqlArrays.texts(connection, these, WebhookEvent::payloadJson));
            ps.setArray(++i, SqlArrays.texts(connection, these, WebhookEvent::parseError));
            Map<String, Integer> positions = new HashMap<>();
            rows.forEach(row -> positions.put(events.get(row).eventId(), row));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    stored[positions.get(rs.getString(1))] = new Stored(rs.getLong(2), rs.getBoolean(3));
                }
            }
        }
    }
}
