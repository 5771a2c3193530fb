package io.chatintake.album;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.chatintake.store.GroupCommit;
import io.chatintake.store.PlannedEachTime;
import io.chatintake.support.CrashPoint;
import io.chatintake.support.FormerHeaderNames;
import io.chatintake.support.MeterRegistryLookup;
import io.chatintake.support.trace.Tracing;
import io.chatintake.work.TraceContext;
import io.chatintake.work.WorkDispatcher;
import io.chatintake.work.WorkQueue;
import io.micrometer.core.instrument.Counter;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.processor.aggregate.AggregateProcessor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides albums and records each decision: its kind, its version and
 * exactly which children it included, read from the stored children, so a decision never misses
 * a stored child.
 * <p>
 * Camel's Aggregator ({@code routes/albums.yaml}) completes an album's group (by count, by its
 * timeout, or forced by the sweep, {@link AlbumDeadlineSweep}, or resubmitted by recovery) and
 * calls {@link #record}. The decision is taken under the album's row lock, from its stored children, and only when they
 * differ from those of the last decision: one version, never two, however many processes or
 * completions (count, timeout, sweep, recovery) try. The first decision is {@code complete},
 * {@code conflict} or {@code provisional}; every later one is {@code late}, which only updates the
 * display and never re-sends anything to a customer.
 */
public final class AlbumDecisions {
    private static final Logger LOG = LoggerFactory.getLogger(AlbumDecisions.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    public static final String DECISION_KIND = AlbumConstants.DECISION_KIND;
    public static final String DECISION_VERSION = AlbumConstants.DECISION_VERSION;
    /** How the decision came about, as recorded in {@code album_decision.completed_by}. */
    static final String BY_COUNT = "predicate";
    static final String BY_DEADLINE = "timeout";
    /** Completed albums recorded per transaction, at most, and such transactions at once. */
    private static final int RECORD_BATCH = 200;
    private static final int RECORD_WRITERS = 4;
    /** Threads the aggregator hands completed albums to ({@link #recorders}): twice the writers, so some hand albums in while others write. */
    private static final int RECORDERS = 2 * RECORD_WRITERS;

    private final GroupCommit<Completion, Optional<Decision>> recorded;

    public AlbumDecisions(DataSource dataSource) {
        this.recorded = new GroupCommit<>(dataSource, RECORD_WRITERS, RECORD_BATCH, AlbumDecisions::recordAll, completions -> false);
    }

    public record Decision(String albumKey, int version, String kind, List<Long> childIds, String completedBy) {
    }

    /** A person settled the album ({@code albums resolve}): needs_person cleared, who and when recorded. */
    public static boolean resolve(Connection c, String albumKey, String by) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                "UPDATE album SET needs_person = false, resolved_by = ?, resolved_at = now() WHERE album_key = ? AND needs_person")) {
            ps.setString(1, by);
            ps.setString(2, albumKey);
            return ps.executeUpdate() == 1;
        }
    }

    /**
     * The aggregator's completion step ({@code routes/albums.yaml}): records the album's decision
     * from its stored children, the group's among them. Completed by the predicate, it decides only
     * if the stored children are complete too (a child the group had not seen may claim another
     * total: the deadline then decides); by timeout, by the sweep or resubmitted by recovery (whose
     * exchange lost its properties), it decides with whatever is stored once the album's deadline
     * in the database has passed (see {@link #decide}). Either way a completion
     * seen twice makes one version: nothing is decided when the children are those of the last one.
     * Albums completed at about the same time are decided in one transaction ({@link GroupCommit}),
     * which also confirms their completions (their completed rows go with it); the route goes on
     * once it has committed, with the decision's kind and version in its headers and the children
     * it includes as its body.
     */
    public CompletableFuture<Void> record(Exchange group) {
        CrashPoint.reach(CrashPoint.ALBUM_AFTER_GROUP_REMOVED);
        String albumKey = group.getMessage().getHeader(AlbumChildSource.ALBUM_KEY, String.class);
        boolean byCount = AggregateProcessor.COMPLETED_BY_PREDICATE.equals(group.getProperty(Exchange.AGGREGATED_COMPLETED_BY, String.class));
        return recorded.submitAsync(new Completion(group.getExchangeId(), albumKey, byCount ? BY_COUNT : BY_DEADLINE)).thenAccept(made -> {
            made.ifPresent(d -> {
                group.getMessage().setHeader(DECISION_KIND, d.kind());
                group.getMessage().setHeader(DECISION_VERSION, d.version());
                FormerHeaderNames.copy(group.getMessage(), AlbumConstants.FORMER_NAMES);
                group.getMessage().setBody(json(d.childIds()));
            });
            announce(group.getContext(), made.stream().toList());
        });
    }

    /**
     * The aggregator's {@code executorService} ({@code routes/albums.yaml}): completed albums are
     * handed to {@link #record} here, and these threads write the shared transactions. Idle
     * threads end, so a reloaded route or a stopped context leaves none behind.
     */
    public static ExecutorService recorders() {
        AtomicInteger threads = new AtomicInteger();
        ThreadPoolExecutor pool = new ThreadPoolExecutor(RECORDERS, RECORDERS, 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), task -> {
            Thread thread = new Thread(task, "album-recorder-" + threads.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        });
        pool.allowCoreThreadTimeOut(true);
        return pool;
    }

    /** A completed group: the aggregated exchange's id is its completed row's. */
    private record Completion(String exchangeId, String albumKey, String completedBy) {
    }

    /**
     * In the batch's transaction: the completions' decisions, and their completed rows removed
     * (confirmed) with them. An album completed twice in one batch is decided for the first.
     */
    private static List<Optional<Decision>> recordAll(Connection transaction, List<Completion> completions) throws SQLException {
        Map<String, String> completedBy = new LinkedHashMap<>();
        completions.forEach(c -> completedBy.merge(c.albumKey(), c.completedBy(), (first, next) -> BY_DEADLINE.equals(next) ? next : first));
        Map<String, Decision> decided = new HashMap<>();
        // The albums' rows are locked first (in decide), as a removal locks them before its completed row.
        decide(transaction, completedBy).forEach(d -> decided.put(d.albumKey(), d));
        try (PreparedStatement ps = transaction.prepareStatement(CONFIRM_COMPLETED)) {
            ps.setArray(1, transaction.createArrayOf("text", completions.stream().map(Completion::exchangeId).toArray()));
            ps.executeUpdate();
        }
        return completions.stream().map(c -> Optional.ofNullable(decided.remove(c.albumKey()))).toList();
    }

    private static final String CONFIRM_COMPLETED = "DELETE FROM album_aggregation_completed WHERE id = ANY (?::text[])";

    static void announce(CamelContext context, List<Decision> decisions) {
        if (decisions.isEmpty()) {
            return;
        }
        for (Decision d : decisions) {
            LOG.info("album {}: decision version {} is {} with {} child(ren) (completed by {})", d.albumKey(), d.version(), d.kind(),
                    d.childIds().size(), d.completedBy());
            Counter.builder("chat_intake_album_decisions").tag("kind", d.kind()).register(MeterRegistryLookup.of(context)).increment();
        }
        WorkDispatcher.nudge(context);
    }

    // Albums locked in key order, so transactions deciding overlapping batches never deadlock. With
    // each, whether its deadline is still ahead by the database's clock (the clock decided_at is read from).
    private static final String LOCK_ALBUMS = """
            SELECT album_key, decided_version, coalesce(decide_after > now(), false)
              FROM album WHERE album_key = ANY (?::text[]) ORDER BY album_key FOR UPDATE""";

    private static final String CHILDREN = """
            SELECT a.album_key, m.id, m.message_id, m.album_index, m.album_total
              FROM album a JOIN channel_message m
                ON m.workspace = a.workspace AND m.provider = a.provider AND m.account_id = a.account_id
               AND m.conversation_id = a.conversation_id AND m.album_id = a.album_id
             WHERE a.album_key = ANY (?::text[])
             ORDER BY a.album_key, m.album_index NULLS LAST, m.sent_at NULLS LAST, m.id""";

    private static final String LAST_DECISIONS = """
            SELECT d.album_key, d.child_ids::text
              FROM album a JOIN album_decision d ON d.album_key = a.album_key AND d.version = a.decided_version
             WHERE a.album_key = ANY (?::text[])""";

    private static final String INSERT_DECISIONS = """
            INSERT INTO album_decision (album_key, version, kind, child_ids, message_ids, totals_seen, indexes_seen, completed_by)
            SELECT k, v, kind, c::jsonb, m::jsonb, t::jsonb, i::jsonb, b
              FROM unnest(?::text[], ?::int[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[]) AS n(k, v, kind, c, m, t, i, b)
            RETURNING id, album_key""";

    private static final String RECORD_DECISIONS = """
            UPDATE album a SET decided_version = n.v, decided_at = now(), decide_after = NULL, needs_person = a.needs_person OR n.conflict
              FROM unnest(?::text[], ?::int[], ?::boolean[]) AS n(k, v, conflict) WHERE a.album_key = n.k""";

    /** Children unchanged since the last decision: nothing to decide until the next child (which sets a new deadline). */
    private static final String CLOSE_DEADLINES = "UPDATE album SET decide_after = NULL WHERE album_key = ANY (?::text[])";

    private record Stored(List<AlbumState.Child> children, List<String> messageIds) {
    }

    /**
     * Under the albums' row locks: by count, decides an album only when its stored children are
     * complete (its deadline stays otherwise); by deadline, with whatever is stored, once the
     * deadline in the database has passed. A deadline still ahead was moved by a child stored after
     * the group was removed as overdue (its transaction began before the removal and committed
     * after): the album stays open until then, unless its children are complete now. Either way no
     * decision is made when the children are those of the last one, and a decided album has no
     * deadline until its next child. A few statements for any number of albums: the sweep decides
     * a batch in one transaction.
     */
    private static List<Decision> decide(Connection c, Map<String, String> completedBy) throws SQLException {
        List<String> albumKeys = new ArrayList<>(completedBy.keySet());
        if (albumKeys.isEmpty()) {
            return List.of();
        }
        Map<String, Integer> lastVersions = new TreeMap<>();
        Set<String> deadlineAhead = new HashSet<>();
        query(c, LOCK_ALBUMS, albumKeys, rs -> {
            lastVersions.put(rs.getString(1), rs.getInt(2));
            if (rs.getBoolean(3)) {
                deadlineAhead.add(rs.getString(1));
            }
        });
        Map<String, Stored> stored = storedChildren(c, albumKeys);
        Map<String, Set<Long>> lastChildren = new HashMap<>();
        query(c, LAST_DECISIONS, albumKeys, rs -> lastChildren.put(rs.getString(1), ids(rs.getString(2))));

        List<Decision> decisions = new ArrayList<>();
        List<String> unchanged = new ArrayList<>();
        List<Boolean> conflicts = new ArrayList<>();
        List<String> messageIds = new ArrayList<>();
        List<String> totals = new ArrayList<>();
        List<String> indexes = new ArrayList<>();
        for (Map.Entry<String, Integer> album : lastVersions.entrySet()) {
            String key = album.getKey();
            int lastVersion = album.getValue();
            Stored children = stored.getOrDefault(key, new Stored(List.of(), List.of()));
            List<Long> childIds = children.children().stream().map(AlbumState.Child::id).toList();
            AlbumState state = AlbumState.of(children.children());
            boolean due = BY_DEADLINE.equals(completedBy.get(key)) && !deadlineAhead.contains(key);
            if (!due && !state.complete()) {
                continue;
            }
            if (lastVersion > 0 && new TreeSet<>(childIds).equals(lastChildren.getOrDefault(key, Set.of()))) {
                unchanged.add(key);
                continue;
            }
            String kind = lastVersion > 0 ? "late" : state.conflicting() ? "conflict" : state.complete() ? "complete" : "provisional";
            decisions.add(new Decision(key, lastVersion + 1, kind, childIds, completedBy.get(key)));
            conflicts.add(state.conflicting());
            messageIds.add(json(children.messageIds()));
            totals.add(json(state.totalsSeen()));
            indexes.add(json(children.children().stream().map(AlbumState.Child::index).toList()));
        }
        if (!unchanged.isEmpty()) {
            try (PreparedStatement ps = c.prepareStatement(CLOSE_DEADLINES)) {
                ps.setArray(1, c.createArrayOf("text", unchanged.toArray()));
                ps.executeUpdate();
            }
        }
        if (decisions.isEmpty()) {
            return decisions;
        }
        Map<Long, String> childTraces = Tracing.current().on() ? childTraces(c, decisions) : Map.of();
        Object[] keys = decisions.stream().map(Decision::albumKey).toArray();
        Object[] versions = decisions.stream().map(Decision::version).toArray();
        List<WorkQueue.NewWork> work = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(INSERT_DECISIONS)) {
            ps.setArray(1, c.createArrayOf("text", keys));
            ps.setArray(2, c.createArrayOf("integer", versions));
            ps.setArray(3, c.createArrayOf("text", decisions.stream().map(Decision::kind).toArray()));
            ps.setArray(4, c.createArrayOf("text", decisions.stream().map(d -> json(d.childIds())).toArray()));
            ps.setArray(5, c.createArrayOf("text", messageIds.toArray()));
            ps.setArray(6, c.createArrayOf("text", totals.toArray()));
            ps.setArray(7, c.createArrayOf("text", indexes.toArray()));
            ps.setArray(8, c.createArrayOf("text", decisions.stream().map(Decision::completedBy).toArray()));
            Map<String, Decision> byKey = new HashMap<>();
            decisions.forEach(d -> byKey.put(d.albumKey(), d));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    Decision d = byKey.get(rs.getString(2));
                    String workKey = d.albumKey() + ":" + d.version();
                    work.add(new WorkQueue.NewWork(AlbumDecisionSource.KIND, workKey, rs.getLong(1), d.albumKey(),
                            TraceContext.linkedTo("album decision", d.childIds().stream().map(childTraces::get).filter(Objects::nonNull).toList(),
                                    "chat_intake.album.decision", d.kind(), "chat_intake.album.version", Integer.toString(d.version()),
                                    "chat_intake.album.children", Integer.toString(d.childIds().size()),
                                    "chat_intake.album.completed_by", d.completedBy())));
                }
            }
        }
        try (PreparedStatement ps = c.prepareStatement(RECORD_DECISIONS)) {
            ps.setArray(1, c.createArrayOf("text", keys));
            ps.setArray(2, c.createArrayOf("integer", versions));
            ps.setArray(3, c.createArrayOf("boolean", conflicts.toArray()));
            ps.executeUpdate();
        }
        WorkQueue.schedule(c, work);
        return decisions;
    }

    // Only while tracing is on: the traces the decided children came in with, for the decision's span to link to.
    private static final String CHILD_TRACES = "SELECT source_id, trace_context FROM work_item WHERE kind = '" + AlbumChildSource.KIND
            + "' AND source_key = ANY (?::text[]) AND trace_context IS NOT NULL";

    private static Map<Long, String> childTraces(Connection c, List<Decision> decisions) throws SQLException {
        Map<Long, String> traces = new HashMap<>();
        try (PreparedStatement ps = c.prepareStatement(CHILD_TRACES)) {
            ps.setArray(1, c.createArrayOf("text", decisions.stream().flatMap(d -> d.childIds().stream())
                    .map(id -> AlbumChildSource.KIND + ":" + id).toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    traces.put(rs.getLong(1), rs.getString(2));
                }
            }
        }
        return traces;
    }

    private static Map<String, Stored> storedChildren(Connection c, List<String> albumKeys) throws SQLException {
        Map<String, Stored> stored = new HashMap<>();
        query(c, CHILDREN, albumKeys, rs -> {
            Stored album = stored.computeIfAbsent(rs.getString(1), k -> new Stored(new ArrayList<>(), new ArrayList<>()));
            album.children().add(new AlbumState.Child(rs.getLong(2), (Integer) rs.getObject(4), (Integer) rs.getObject(5)));
            album.messageIds().add(rs.getString(3));
        });
        return stored;
    }

    @FunctionalInterface
    private interface RowReader {
        void read(ResultSet row) throws SQLException;
    }

    /**
     * A batch of albums is planned at each execution: a plan kept from while few albums were decided
     * would read every decision to find the last ones of a batch. One album keeps the driver's plan.
     */
    private static void query(Connection c, String sql, List<String> albumKeys, RowReader reader) throws SQLException {
        try (PreparedStatement ps = albumKeys.size() > 1 ? PlannedEachTime.prepare(c, sql) : c.prepareStatement(sql)) {
            ps.setArray(1, c.createArrayOf("text", albumKeys.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    reader.read(rs);
                }
            }
        }
    }

    private static Set<Long> ids(String json) throws SQLException {
        try {
            Set<Long> ids = new TreeSet<>();
            JSON.readTree(json).forEach(n -> ids.add(n.asLong()));
            return ids;
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new SQLException("unreadable child_ids of an album decision", e);
        }
    }

    private static String json(Object value) {
        try {
            return JSON.writeValueAsString(value instanceof Set<?> set ? new ArrayList<>(set) : value);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}
