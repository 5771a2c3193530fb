package io.chatintake.channel.webhook;

import io.chatintake.message.ChannelMessage;
import io.chatintake.message.ChannelMessageStore;
import io.chatintake.message.ChildMessageListener;
import io.chatintake.store.BoundedStatement;
import io.chatintake.store.GroupCommit;
import io.chatintake.store.SqlArrays;
import io.chatintake.store.UpsertRuns;
import io.chatintake.work.WorkQueue;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;

/**
 * Stores the verified events of one delivery and, for message events, their child messages, in
 * one transaction, each new event with its work staged ({@link WorkQueue#stageTracedFrom}: the work
 * dispatcher's scheduler writes the work item right after the commit, so the answer does not wait
 * for lanes and work items). Returning from {@link #store} means committed: only then may the
 * caller answer 2xx. Every statement is bounded
 * ({@code statement_timeout} on the server, sent with each transaction's first statement; a socket
 * timeout on the client), so a slow or vanished database turns into an exception, never a hung
 * request.
 */
public final class WebhookEventStore implements WebhookEventSink {
    private static final String EVENT_COLUMNS =
            "workspace, channel, event_id, first_delivery_id, last_delivery_id, event_type, provider, account_id, occurred_at, body, payload, parse_error";

    /** A key retention deleted the event of ({@code webhook_event_purged}): a replay of it is a duplicate, not a new event. */
    private static final String NOT_PURGED = """
            NOT EXISTS (SELECT 1 FROM webhook_event_purged p WHERE p.workspace = ? AND p.channel = ? AND p.event_id = %s)""";

    /** A redelivery only counts itself on the row its first delivery wrote. */
    private static final String ON_REDELIVERY = """
            ON CONFLICT (workspace, channel, event_id) DO UPDATE
                   SET delivery_count = webhook_event.delivery_count + 1,
                       last_delivery_id = EXCLUDED.last_delivery_id,
                       last_received_at = now()""";

    /**
     * The events of a run of deliveries, in one statement (one round trip): each event; for a new
     * one, its child and its staged work. (workspace, channel, event id) is the idempotency key: a
     * redelivery only counts itself on the existing row ({@code xmax = 0} tells a fresh insert
     * from a conflict update), and is neither applied again (that could undo a newer change) nor
     * scheduled again (its business work would run twice). One array per column, rows in order;
     * each event and each child occurs once in a run.
     */
    private static final String WRITE = """
            WITH e AS (
                SELECT e.event_id, e.delivery_id, e.event_type, e.provider, e.account_id, CAST(e.occurred_at AS timestamptz) AS occurred_at,
                       e.body, CAST(e.payload AS jsonb) AS payload, e.parse_error, e.chat_key, e.trace_context, e.n
                  FROM unnest(CAST(? AS text[]), CAST(? AS text[]), CAST(? AS text[]), CAST(? AS text[]), CAST(? AS text[]),
                              CAST(? AS text[]), CAST(? AS bytea[]), CAST(? AS text[]), CAST(? AS text[]), CAST(? AS text[]), CAST(? AS text[]))
                       WITH ORDINALITY AS e(event_id, delivery_id, event_type, provider, account_id, occurred_at, body, payload, parse_error,
                                            chat_key, trace_context, n)),
            child_rows AS (%s),
            ev AS (
                INSERT INTO webhook_event (%s)
                SELECT ?, ?, event_id, delivery_id, delivery_id, event_type, provider, account_id, occurred_at, body, payload, parse_error
                  FROM e WHERE %s ORDER BY n
                %s
                RETURNING event_id, id, (xmax = 0) AS inserted),
            fresh AS (SELECT e.n, e.event_id, e.chat_key, e.trace_context, ev.id FROM e JOIN ev ON ev.event_id = e.event_id WHERE ev.inserted),
            new_child AS (SELECT c.* FROM child_rows c JOIN fresh ON fresh.n = c.n WHERE c.message_id IS NOT NULL),
            %s,
            new_work AS (SELECT CAST(? AS text) AS kind, CAST(? AS text) || event_id AS source_key, id AS source_id, chat_key, trace_context,
                                n AS o FROM fresh),
            %s
            SELECT ev.id, ev.inserted, c.id, c.inserted, c.album_assigned, c.has_attachments
              FROM e LEFT JOIN ev ON ev.event_id = e.event_id
              JOIN child_rows r ON r.n = e.n
              LEFT JOIN children c ON ev.inserted AND (c.provider, c.account_id, c.conversation_id, c.message_id)
                                                    = (r.provider, r.account_id, r.conversation_id, r.message_id)
             ORDER BY e.n
            """.formatted(ChannelMessageStore.CHILD_ROWS, EVENT_COLUMNS, NOT_PURGED.formatted("e.event_id"), ON_REDELIVERY, ChannelMessageStore.upsertFrom("new_child"),
            WorkQueue.stageTracedFrom("new_work"));

    /**
     * The one event of a transaction that holds no other (every delivery of a lone sender): the
     * rows {@link #WRITE} gives a run of one, from plain parameters, with less server work (no
     * arrays, joins or sorts to set up). The child's CTE only for an event about a message, with
     * the one kind of upsert its change needs.
     */
    private static final String LONE = """
            WITH ev AS (
                INSERT INTO webhook_event (%s)
                SELECT ?, ?, ?, ?, ?, ?, ?, ?, CAST(? AS timestamptz), ?, CAST(? AS jsonb), ? WHERE %s
                %s
                RETURNING id, (xmax = 0) AS inserted),
            %%s
            new_work AS (SELECT CAST(? AS text) AS kind, CAST(? AS text) AS source_key, id AS source_id, CAST(? AS text) AS chat_key,
                              CAST(? AS text) AS trace_context, 1 AS o
                           FROM ev WHERE ev.inserted),
            %s
            SELECT ev.id, ev.inserted, %%s
            """.formatted(EVENT_COLUMNS, NOT_PURGED.formatted("?"), ON_REDELIVERY, WorkQueue.stageTracedFrom("new_work"));
    /** One row even when a purged key kept the event out (ev empty). */
    private static final String LONE_ROW = " FROM (SELECT 1) one LEFT JOIN ev ON true";
    private static final String LONE_WITHOUT_CHILD = LONE.formatted("", "NULL, NULL, NULL, NULL" + LONE_ROW);
    private static final Map<ChannelMessage.Change, String> LONE_WITH_CHILD = new EnumMap<>(ChannelMessage.Change.class);

    static {
        for (ChannelMessage.Change change : ChannelMessage.Change.values()) {
            LONE_WITH_CHILD.put(change, LONE.formatted(ChannelMessageStore.upsertOneFrom("ev WHERE ev.inserted", change) + ",",
                    "c.id, c.inserted, c.album_assigned, c.has_attachments" + LONE_ROW + " LEFT JOIN child c ON true"));
        }
    }

    /**
     * Transactions in flight at once, each holding the deliveries that arrived while the others ran.
     * Two: one still goes on while the other waits (a lock, a slow fsync), and bigger groups cost
     * fewer commits; more committers would only split the groups.
     */
    private static final int COMMITTERS = 2;
    private static final int MAX_GROUP = 32;

    private final GroupCommit<List<WebhookEvent>, List<Stored>> commits;
    /** The statements above, each the first of its transaction, so each carries the statement timeout. */
    private final String write;
    private final String loneWithoutChild;
    private final Map<ChannelMessage.Change, String> loneWithChild = new EnumMap<>(ChannelMessage.Change.class);
    private final String workspace;
    private final String channel;
    private final String workKind;
    private final ChildMessageListener childListener;

    /**
     * @param workKind the kind of work item each new event becomes
     * @param intakeBehind told while deliveries queue for a transaction (the work dispatcher then holds handlers back)
     */
    public WebhookEventStore(DataSource dataSource, Duration statementTimeout, String workspace, String channel, String workKind,
                             ChildMessageListener childListener, Runnable intakeBehind) {
        this.commits = new GroupCommit<>(dataSource, statementTimeout, COMMITTERS, MAX_GROUP, this::write, this::oneStatement, intakeBehind);
        this.write = BoundedStatement.of(statementTimeout, WRITE);
        this.loneWithoutChild = BoundedStatement.of(statementTimeout, LONE_WITHOUT_CHILD);
        LONE_WITH_CHILD.forEach((change, sql) -> loneWithChild.put(change, BoundedStatement.of(statementTimeout, sql)));
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
     * The one transaction of a delivery: every event, its child, the child's listeners, its staged
     * work. Deliveries arriving together share it ({@link GroupCommit}); returning means committed.
     */
    public List<Stored> store(List<WebhookEvent> events) throws SQLException {
        return commits.submit(events);
    }

    /**
     * Whether deliveries are written by one statement: nothing in them for the children's
     * listeners (most messages: no attachments, no album) and one run of events ({@link #write}).
     */
    private boolean oneStatement(List<List<WebhookEvent>> deliveries) {
        List<WebhookEvent> events = deliveries.stream().flatMap(List::stream).toList();
        return events.stream().noneMatch(this::forListeners) && (events.size() == 1 || runsOf(events).size() == 1);
    }

    /** Whether the event's child can give the children's listeners anything to write; only such children are told to them. */
    private boolean forListeners(WebhookEvent event) {
        return event.message() != null && childListener.mayWrite(event.message());
    }

    /**
     * The deliveries of one transaction: one statement per run of events (events and children
     * distinct), then what the children's listeners write (attachments, downloads and albums
     * commit with their children).
     */
    private List<List<Stored>> write(Connection connection, List<List<WebhookEvent>> deliveries) throws SQLException {
        List<WebhookEvent> events = deliveries.stream().flatMap(List::stream).toList();
        Stored[] stored = new Stored[events.size()];
        List<ChildMessageListener.StoredChild> children = new ArrayList<>();
        if (events.size() == 1) {
            writeLone(connection, events.get(0), stored, children);
        } else {
            for (List<Integer> run : runsOf(events)) {
                writeRun(connection, run.stream().map(events::get).toList(), run, stored, children);
            }
        }
        if (!children.isEmpty()) {
            childListener.stored(connection, children);
        }
        List<List<Stored>> result = new ArrayList<>(deliveries.size());
        int next = 0;
        for (List<WebhookEvent> delivery : deliveries) {
            result.add(Arrays.asList(stored).subList(next, next + delivery.size()));
            next += delivery.size();
        }
        return result;
    }

    /** Runs of events that one statement can write: each event and each child at most once in a run. */
    private static List<List<Integer>> runsOf(List<WebhookEvent> events) {
        return UpsertRuns.of(events, WebhookEvent::eventId, e -> e.message() == null ? null : ChannelMessageStore.keyOf(e.message()));
    }

    private void writeRun(Connection connection, List<WebhookEvent> these, List<Integer> positions, Stored[] stored,
                          List<ChildMessageListener.StoredChild> children) throws SQLException {
        try (PreparedStatement ps = connection.prepareStatement(write)) {
            int i = 0;
            ps.setArray(++i, SqlArrays.texts(connection, these, WebhookEvent::eventId));
            ps.setArray(++i, SqlArrays.texts(connection, these, WebhookEvent::deliveryId));
            ps.setArray(++i, SqlArrays.texts(connection, these, WebhookEvent::type));
            ps.setArray(++i, SqlArrays.texts(connection, these, WebhookEvent::provider));
            ps.setArray(++i, SqlArrays.texts(connection, these, WebhookEvent::accountId));
            ps.setArray(++i, SqlArrays.texts(connection, these, e -> SqlArrays.timestamp(e.occurredAt())));
            ps.setArray(++i, SqlArrays.bytes(connection, these, WebhookEvent::body));
            ps.setArray(++i, SqlArrays.texts(connection, these, WebhookEvent::payloadJson));
            ps.setArray(++i, SqlArrays.texts(connection, these, WebhookEvent::parseError));
            ps.setArray(++i, SqlArrays.texts(connection, these, e -> e.chatKey(workspace)));
            ps.setArray(++i, SqlArrays.texts(connection, these, WebhookEvent::traceContext));
            i = ChannelMessageStore.bindChildRows(connection, ps, i + 1, workspace, these, WebhookEvent::message, WebhookEvent::change,
                    WebhookEvent::eventId, WebhookEvent::occurredAt);
            ps.setString(i++, workspace);
            ps.setString(i++, channel);
            ps.setString(i++, workspace);
            ps.setString(i++, channel);
            ps.setString(i++, workKind);
            ps.setString(i, workspace + ":" + channel + ":");
            read(ps, these, positions, stored, children);
        }
    }

    private void writeLone(Connection connection, WebhookEvent event, Stored[] stored, List<ChildMessageListener.StoredChild> children)
            throws SQLException {
        boolean aboutAChild = event.message() != null && event.message().messageId() != null;
        try (PreparedStatement ps = connection.prepareStatement(aboutAChild ? loneWithChild.get(event.change()) : loneWithoutChild)) {
            int i = 0;
            ps.setString(++i, workspace);
            ps.setString(++i, channel);
            ps.setString(++i, event.eventId());
            ps.setString(++i, event.deliveryId());
            ps.setString(++i, event.deliveryId());
            ps.setString(++i, event.type());
            ps.setString(++i, event.provider());
            ps.setString(++i, event.accountId());
            ps.setString(++i, SqlArrays.timestamp(event.occurredAt()));
            ps.setBytes(++i, event.body());
            ps.setString(++i, event.payloadJson());
            ps.setString(++i, event.parseError());
            ps.setString(++i, workspace);
            ps.setString(++i, channel);
            ps.setString(++i, event.eventId());
            if (aboutAChild) {
                i = ChannelMessageStore.bindChildRow(ps, i + 1, workspace, event.message(), event.change(), event.eventId(),
                        event.occurredAt()) - 1;
            }
            ps.setString(++i, workKind);
            ps.setString(++i, workspace + ":" + channel + ":" + event.eventId());
            ps.setString(++i, event.chatKey(workspace));
            ps.setString(++i, event.traceContext());
            read(ps, List.of(event), List.of(0), stored, children);
        }
    }

    /**
     * Each row, one per event of {@code these}: the event's row and whether this delivery wrote it
     * first (id 0, not first, when its key was purged); its child's, when it has one, is new and is for the listeners.
     */
    private void read(PreparedStatement ps, List<WebhookEvent> these, List<Integer> positions, Stored[] stored,
                      List<ChildMessageListener.StoredChild> children) throws SQLException {
        try (ResultSet rs = BoundedStatement.query(ps)) {
            for (int row = 0; rs.next(); row++) {
                stored[positions.get(row)] = new Stored(rs.getLong(1), rs.getBoolean(2));
                rs.getLong(3);
                if (!rs.wasNull() && forListeners(these.get(row))) {
                    children.add(ChildMessageListener.StoredChild.of(ChannelMessageStore.appliedOf(rs, 3), these.get(row).traceContext()));
                }
            }
        }
    }
}
