package io.chatintake.channel.webhook;

import io.chatintake.store.BoundedStatement;
import io.chatintake.store.GroupCommit;
import io.chatintake.store.SqlArrays;
import io.chatintake.store.UpsertRuns;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import javax.sql.DataSource;

/**
 * Stores the verified events of one delivery, one row each, in one transaction: the row is the
 * durable job. What an event implies (its child message and the child's listeners, its work item)
 * is in the row too ({@link MappedChild}, work kind, chat key, trace context) and is derived after
 * the commit ({@link WebhookEventDeriver}), so the answer waits for one row per event and nothing
 * else. Returning from {@link #store} means committed: only then may the caller answer 2xx. Every
 * statement is bounded ({@code statement_timeout} on the server, sent with each transaction's
 * first statement; a socket timeout on the client), so a slow or vanished database turns into an
 * exception, never a hung request.
 */
public final class WebhookEventStore implements WebhookEventSink {
    private static final String EVENT_COLUMNS = "workspace, channel, event_id, first_delivery_id, last_delivery_id, event_type, provider,"
            + " account_id, occurred_at, body, payload, parse_error, child, work_kind, chat_key, trace_context, derived_at";

    /** A key retention deleted the event of ({@code webhook_event_purged}): a replay of it is a duplicate, not a new event. */
    private static final String NOT_PURGED = """
            NOT EXISTS (SELECT 1 FROM webhook_event_purged p WHERE p.workspace = ? AND p.channel = ? AND p.event_id = %s)""";

    /** A redelivery only counts itself on the row its first delivery wrote (and so is neither derived nor handled again). */
    private static final String ON_REDELIVERY = """
            ON CONFLICT (workspace, channel, event_id) DO UPDATE
                   SET delivery_count = webhook_event.delivery_count + 1,
                       last_delivery_id = EXCLUDED.last_delivery_id,
                       last_received_at = now()""";

    /**
     * The events of a run of deliveries, in one statement (one round trip). (workspace, channel,
     * event id) is the idempotency key: a redelivery only counts itself on the existing row
     * ({@code xmax = 0} tells a fresh insert from a conflict update). One array per column, rows
     * in order; each event occurs once in a run. One result row per event, in order (no id when
     * its key was purged).
     */
    private static final String WRITE = """
            WITH e AS (
                SELECT e.event_id, e.delivery_id, e.event_type, e.provider, e.account_id, CAST(e.occurred_at AS timestamptz) AS occurred_at,
                       e.body, CAST(e.payload AS jsonb) AS payload, e.parse_error, e.child, e.chat_key, e.trace_context, e.n
                  FROM unnest(CAST(? AS text[]), CAST(? AS text[]), CAST(? AS text[]), CAST(? AS text[]), CAST(? AS text[]),
                              CAST(? AS text[]), CAST(? AS bytea[]), CAST(? AS text[]), CAST(? AS text[]), CAST(? AS text[]),
                              CAST(? AS text[]), CAST(? AS text[]))
                       WITH ORDINALITY AS e(event_id, delivery_id, event_type, provider, account_id, occurred_at, body, payload, parse_error,
                                            child, chat_key, trace_context, n)),
            ev AS (
                INSERT INTO webhook_event (%s)
                SELECT ?, ?, event_id, delivery_id, delivery_id, event_type, provider, account_id, occurred_at, body, payload, parse_error,
                       child, ?, chat_key, trace_context, CAST(NULL AS timestamptz)
                  FROM e WHERE %s ORDER BY n
                %s
                RETURNING event_id, id, (xmax = 0) AS inserted)
            SELECT ev.id, ev.inserted FROM e LEFT JOIN ev ON ev.event_id = e.event_id ORDER BY e.n
            """.formatted(EVENT_COLUMNS, NOT_PURGED.formatted("e.event_id"), ON_REDELIVERY);

    /**
     * The one event of a transaction that holds no other (every delivery of a lone sender): the
     * row {@link #WRITE} gives a run of one, from plain parameters, with less server work (no
     * arrays or joins). No row back when its key was purged.
     */
    private static final String LONE = """
            INSERT INTO webhook_event (%s)
            SELECT ?, ?, ?, ?, ?, ?, ?, ?, CAST(? AS timestamptz), ?, CAST(? AS jsonb), ?, ?, ?, ?, ?, CAST(NULL AS timestamptz) WHERE %s
            %s
            RETURNING id, (xmax = 0) AS inserted
            """.formatted(EVENT_COLUMNS, NOT_PURGED.formatted("?"), ON_REDELIVERY);

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
    private final String lone;
    private final String workspace;
    private final String channel;
    private final String workKind;

    /**
     * @param workKind the kind of work item each new event becomes (once derived)
     * @param intakeBehind told while deliveries queue for a transaction (the work dispatcher then holds handlers back)
     */
    public WebhookEventStore(DataSource dataSource, Duration statementTimeout, String workspace, String channel, String workKind,
                             Runnable intakeBehind) {
        this.commits = new GroupCommit<>(dataSource, statementTimeout, COMMITTERS, MAX_GROUP, this::write, this::oneStatement, intakeBehind);
        this.write = BoundedStatement.of(statementTimeout, WRITE);
        this.lone = BoundedStatement.of(statementTimeout, LONE);
        this.workspace = workspace;
        this.channel = channel;
        this.workKind = workKind;
    }

    @Override
    public List<Stored> store(Delivery delivery, List<WebhookEvent> events) throws SQLException {
        return store(events);
    }

    /**
     * The one transaction of a delivery: a row for every event, the job of its derivation.
     * Deliveries arriving together share it ({@link GroupCommit}); returning means committed.
     */
    public List<Stored> store(List<WebhookEvent> events) throws SQLException {
        return commits.submit(events);
    }

    /** Whether deliveries are written by one statement: one run of events ({@link #write}). */
    private boolean oneStatement(List<List<WebhookEvent>> deliveries) {
        List<WebhookEvent> events = deliveries.stream().flatMap(List::stream).toList();
        return events.size() == 1 || runsOf(events).size() == 1;
    }

    /** The deliveries of one transaction: one statement per run of events. */
    private List<List<Stored>> write(Connection connection, List<List<WebhookEvent>> deliveries) throws SQLException {
        List<WebhookEvent> events = deliveries.stream().flatMap(List::stream).toList();
        Stored[] stored = new Stored[events.size()];
        if (events.size() == 1) {
            stored[0] = writeLone(connection, events.get(0));
        } else {
            for (List<Integer> run : runsOf(events)) {
                writeRun(connection, run.stream().map(events::get).toList(), run, stored);
            }
        }
        List<List<Stored>> result = new ArrayList<>(deliveries.size());
        int next = 0;
        for (List<WebhookEvent> delivery : deliveries) {
            result.add(Arrays.asList(stored).subList(next, next + delivery.size()));
            next += delivery.size();
        }
        return result;
    }

    /** Runs of events that one statement can write: each event at most once in a run (an upsert touches a row once). */
    private static List<List<Integer>> runsOf(List<WebhookEvent> events) {
        return UpsertRuns.of(events, WebhookEvent::eventId);
    }

    private void writeRun(Connection connection, List<WebhookEvent> these, List<Integer> positions, Stored[] stored) throws SQLException {
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
            ps.setArray(++i, SqlArrays.texts(connection, these, MappedChild::json));
            ps.setArray(++i, SqlArrays.texts(connection, these, e -> e.chatKey(workspace)));
            ps.setArray(++i, SqlArrays.texts(connection, these, WebhookEvent::traceContext));
            ps.setString(++i, workspace);
            ps.setString(++i, channel);
            ps.setString(++i, workKind);
            ps.setString(++i, workspace);
            ps.setString(++i, channel);
            try (ResultSet rs = BoundedStatement.query(ps)) {
                for (int row = 0; rs.next(); row++) {
                    stored[positions.get(row)] = new Stored(rs.getLong(1), rs.getBoolean(2));
                }
            }
        }
    }

    /** The event's row and whether this delivery wrote it first; id 0, not first, when its key was purged. */
    private Stored writeLone(Connection connection, WebhookEvent event) throws SQLException {
        try (PreparedStatement ps = connection.prepareStatement(lone)) {
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
            ps.setString(++i, MappedChild.json(event));
            ps.setString(++i, workKind);
            ps.setString(++i, event.chatKey(workspace));
            ps.setString(++i, event.traceContext());
            ps.setString(++i, workspace);
            ps.setString(++i, channel);
            ps.setString(++i, event.eventId());
            try (ResultSet rs = BoundedStatement.query(ps)) {
                return rs.next() ? new Stored(rs.getLong(1), rs.getBoolean(2)) : new Stored(0, false);
            }
        }
    }
}
