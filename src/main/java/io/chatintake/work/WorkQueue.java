package io.chatintake.work;

import static io.chatintake.store.Transactions.inRedoableTransaction;
import static io.chatintake.store.Transactions.inTransaction;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import javax.sql.DataSource;

/**
 * The stored work, as the rest of the runner sees it: pending -> running (claimed until the claim
 * expires or its process stops beating) -> done, or failed (retried at next_attempt_at) -> parked
 * after the last attempt ({@link ItemState}).
 * <p>
 * Items of one chat (a chat key) are claimed through the chat's lane ({@code work_lane}): one
 * worker at a time holds a lane and takes a run of its consecutive due items, so per-chat order
 * costs an indexed lookup of due lanes, not a scan of the backlog. One claim takes the runs of
 * many lanes and one commit records them. Every lane claimed carries a new token (fencing).
 * <p>
 * The parts: {@link WorkItemRepository}, the only writer of {@code work_item}; {@link WorkLanes}
 * (lanes taken, reopened, extended, freed); {@link LaneClaims} (picking due runs);
 * {@link FinishRuns} (recording outcomes). This class stages and schedules new work.
 */
public final class WorkQueue {
    private final DataSource dataSource;
    private final FinishRuns finishing;
    private final LaneClaims lanes;

    public WorkQueue(DataSource dataSource) {
        this.dataSource = dataSource;
        this.finishing = new FinishRuns(dataSource);
        this.lanes = new LaneClaims(dataSource, finishing);
    }

    /** Work to schedule, keyed by its source: scheduling the same source twice schedules it once. */
    public record NewWork(String kind, String sourceKey, long sourceId, String chatKey, String traceContext) {
        /** Work outside any message's trace (operator actions, follow-up work). */
        public NewWork(String kind, String sourceKey, long sourceId, String chatKey) {
            this(kind, sourceKey, sourceId, chatKey, null);
        }
    }

    /**
     * Two CTEs, {@code lanes} and {@code items}, that schedule the rows of the relation
     * {@code source} (kind, source_key, source_id, chat_key, o) in the order of {@code o}, for a
     * statement that works out its new work in SQL; {@code items} returns (id, source_id,
     * source_key) of the items it created. Scheduling the same source twice schedules it once.
     * <p>
     * The chats' lanes are taken first, in one order (two transactions never wait for each other
     * in a circle), and held to commit: items of one chat then get their ids in commit order (a
     * lane's head never passes an item committed later), and a worker that finds the lane empty
     * either sees these items or makes the lane due again after this commit. An unclaimed lane
     * becomes due now; a claimed one is made due when its run is finished.
     */
    public static String scheduleFrom(String source) {
        return WorkLanes.lanesFrom(source) + ",\n" + WorkItemRepository.itemsFrom(source, UNTRACED);
    }

    /** {@link #scheduleFrom} of a relation that also has the messages' {@code trace_context} ({@link TraceContext}). */
    public static String scheduleTracedFrom(String source) {
        return WorkLanes.lanesFrom(source) + ",\n" + WorkItemRepository.itemsFrom(source, "trace_context");
    }

    private static final String UNTRACED = "CAST(NULL AS text)";

    private static final String SCHEDULE = """
            WITH new_work AS (
                SELECT * FROM unnest(?::text[], ?::text[], ?::bigint[], ?::text[], ?::text[])
                              WITH ORDINALITY AS n(kind, source_key, source_id, chat_key, trace_context, o)),
            %s
            SELECT count(*) FROM items""".formatted(scheduleTracedFrom("new_work"));

    /**
     * A CTE, {@code staged}, that stages the rows of the relation {@code source} (kind, source_key,
     * source_id, chat_key, o) in the order of {@code o}: work that {@link #scheduleStaged} turns
     * into items after the caller's transaction committed, for intake whose answer must not wait
     * for lanes and work items. Staged work is scheduled once, however often it is staged.
     */
    public static String stageFrom(String source) {
        return staged(source, UNTRACED);
    }

    /** {@link #stageFrom} of a relation that also has the messages' {@code trace_context} ({@link TraceContext}). */
    public static String stageTracedFrom(String source) {
        return staged(source, "trace_context");
    }

    private static String staged(String source, String traceContext) {
        return """
                staged AS (
                    INSERT INTO work_staged (kind, source_key, source_id, chat_key, trace_context)
                    SELECT kind, source_key, source_id, chat_key, %s FROM %s ORDER BY o
                    RETURNING 1)""".formatted(traceContext, source);
    }

    // One scheduler at a time in the whole database: two taking turns on disjoint staged rows
    // could lock one chat's lane in the other order and give a later item the lower id.
    private static final String LOCK_STAGED = "SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.work_staged'))";

    // The rows to take are found through the primary key, as the range of the first ids: insert/delete
    // churn leaves the heap full of dead rows until the next vacuum, and a sequential scan would read
    // them all to take a few. Only committed rows are in the range.
    static final String SCHEDULE_STAGED = """
            WITH taken AS (
                DELETE FROM work_staged WHERE id BETWEEN (SELECT min(id) FROM work_staged)
                                                     AND (SELECT max(id) FROM (SELECT id FROM work_staged ORDER BY id LIMIT ?) first)
                RETURNING kind, source_key, source_id, chat_key, trace_context, id AS o),
            %s
            SELECT count(*) FROM taken""".formatted(scheduleTracedFrom("taken"));

    /**
     * Turns up to {@code limit} staged rows, oldest first, into lanes and work items in one
     * transaction, which deletes them. Losing that commit in a database crash loses the deletion
     * with the items, so its commit does not wait for the disk.
     * @return the staged rows taken; {@code limit} means more may be waiting
     */
    public int scheduleStaged(int limit) throws SQLException {
        return inRedoableTransaction(dataSource, c -> {
            try (PreparedStatement lock = c.prepareStatement(LOCK_STAGED)) {
                lock.execute();
            }
            try (PreparedStatement ps = c.prepareStatement(SCHEDULE_STAGED)) {
                ps.setInt(1, limit);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return rs.getInt(1);
                }
            }
        });
    }

    /** Whether any work is staged: a look that takes no lock, before a scheduling transaction. */
    public boolean anyStaged() throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement("SELECT EXISTS (SELECT 1 FROM work_staged)");
             ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getBoolean(1);
        }
    }

    /**
     * Schedules work inside the caller's transaction: the one that stored its source, so that
     * stored means scheduled, or one that follows its source from storage by a checkpoint of its
     * own. Ids follow the list's order, which is the per-chat order.
     * @return the items created (work already scheduled is not scheduled again)
     */
    public static int schedule(Connection transaction, List<NewWork> work) throws SQLException {
        if (work.isEmpty()) {
            return 0;
        }
        try (PreparedStatement ps = transaction.prepareStatement(SCHEDULE)) {
            ps.setArray(1, transaction.createArrayOf("text", work.stream().map(NewWork::kind).toArray()));
            ps.setArray(2, transaction.createArrayOf("text", work.stream().map(NewWork::sourceKey).toArray()));
            ps.setArray(3, transaction.createArrayOf("bigint", work.stream().map(NewWork::sourceId).toArray()));
            ps.setArray(4, transaction.createArrayOf("text", work.stream().map(NewWork::chatKey).toArray()));
            ps.setArray(5, transaction.createArrayOf("text", work.stream().map(NewWork::traceContext).toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    /** Schedules one item, or runs an existing one again from the start (done, parked or still retrying). */
    public static void scheduleAgain(Connection transaction, NewWork work) throws SQLException {
        if (work.chatKey() != null) {
            // The lane before its item, as in scheduleFrom.
            WorkLanes.lock(transaction, work.kind(), work.chatKey());
        }
        WorkLanes.reopen(transaction, WorkItemRepository.scheduleAgain(transaction, work.kind(), work.sourceKey(), work.sourceId(),
                work.chatKey()));
    }

    /**
     * Claims the due item without a chat that waited longest among the given kinds (those this
     * process has a handler for: other kinds are left for a process that has one), or returns null.
     */
    public WorkRun claimUnlaned(String worker, Duration claim, Collection<String> kinds) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            return WorkItemRepository.claimUnlaned(c, worker, claim, kinds);
        }
    }

    /**
     * The run of the lane that has been due longest: up to {@code runSize} consecutive items of
     * one chat from its head ({@link #claimLanes} with one lane). Null when no lane has a run.
     */
    public WorkRun claimLane(String worker, Duration claim, int runSize, Collection<String> orderedKinds,
                             Collection<String> kinds) throws SQLException {
        List<WorkRun> runs = claimLanes(worker, claim, runSize, 1, orderedKinds, kinds).runs();
        return runs.isEmpty() ? null : runs.get(0);
    }

    /** The runs of up to {@code maxLanes} lanes that have been due longest ({@link LaneClaims}). */
    public Claimed claimLanes(String worker, Duration claim, int runSize, int maxLanes, Collection<String> orderedKinds,
                              Collection<String> kinds) throws SQLException {
        return lanes.claim(worker, claim, runSize, maxLanes, orderedKinds, kinds);
    }

    /** {@link #finish(List)} of one run. @return false when its claim was lost */
    public boolean finish(WorkRun run, List<RunResult> outcomes, List<WorkItem> notRun) throws SQLException {
        return finish(List.of(new FinishedRun(run, outcomes, notRun))).isEmpty();
    }

    /**
     * Records what workers did with runs and releases the lanes of runs that end, in one commit ({@link FinishRuns}).
     * @return the tokens of runs whose claim was lost (released or taken over)
     */
    public Set<Long> finish(List<FinishedRun> finished) throws SQLException {
        return finishing.finish(finished);
    }

    /**
     * Whether the database server started within this span: a claim made before it may be gone,
     * since a claim commits without waiting for the disk. False when the database cannot say.
     */
    public boolean restartedWithin(Duration span) {
        try (Connection c = dataSource.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT pg_postmaster_start_time() > now() - make_interval(secs => ?)")) {
            ps.setDouble(1, span.toNanos() / 1e9);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        } catch (SQLException e) {
            return false;
        }
    }

    /** Of these results, the items whose run at that attempt {@code worker} has recorded (work_run). */
    public Set<Long> recordedBy(String worker, List<RunResult> results) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            return WorkItemRepository.recordedBy(c, worker, results);
        }
    }

    /**
     * Extends the claims of runs still running in this process (their handlers may be slow).
     * @return the tokens still held; a token missing was lost (released or taken over)
     */
    public List<Long> extend(String worker, Collection<Long> tokens, Duration claim) throws SQLException {
        if (tokens.isEmpty()) {
            return List.of();
        }
        try (Connection c = dataSource.getConnection()) {
            WorkLanes.extend(c, worker, tokens, claim);
            return WorkItemRepository.extend(c, worker, tokens, claim);
        }
    }

    /**
     * Releases the claims of processes that stopped beating: their items are due at once (they
     * keep the attempt they were claimed for) and their lanes free, with new tokens to come, so a
     * late outcome of such a process is dropped.
     * @return the items released
     */
    public int releaseClaimsOfDeadProcesses(String self, Duration silence) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            // Items first: a lane freed before its items would be found with nothing due.
            int released = WorkItemRepository.releaseClaimsOfSilentProcesses(c, self, silence);
            WorkLanes.releaseClaimsOfSilentProcesses(c, self, silence);
            return released;
        }
    }

    /** Parked (or failed) items back to pending, due now, attempts reset. {@code id} null: every parked item. */
    public int retry(Long id) throws SQLException {
        return inTransaction(dataSource, c -> retry(c, id));
    }

    /** The same inside the caller's transaction (an operator action committed with its audit row). */
    public static int retry(Connection c, Long id) throws SQLException {
        return WorkLanes.reopen(c, WorkItemRepository.retry(c, id));
    }

    /** Items whose content was erased, unless running, end as {@code erased}; returns how many. */
    public static int erase(Connection c, Long[] ids) throws SQLException {
        return WorkItemRepository.erase(c, ids).size();
    }

    /** An explicit re-run of done items of one kind created since a time; never implicit. */
    public int replay(String kind, Instant since) throws SQLException {
        return inTransaction(dataSource, c -> WorkLanes.reopen(c, WorkItemRepository.replay(c, kind, since)));
    }

    /**
     * A DELETE of the items ({@code w}) that {@code condition} picks with the relation {@code source},
     * returning one row each, for retention's statement that removes old sources and their done
     * items together: {@link WorkItemRepository} stays the only writer of {@code work_item}.
     */
    public static String deleteWhere(String source, String condition) {
        return WorkItemRepository.deleteWhere(source, condition);
    }

    public DataSource dataSource() {
        return dataSource;
    }
}
