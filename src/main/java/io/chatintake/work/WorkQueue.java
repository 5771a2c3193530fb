package io.chatintake.work;

import static io.chatintake.store.Transactions.inRedoableTransaction;
import static io.chatintake.store.Transactions.inTransaction;

import io.chatintake.store.PlannedEachTime;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import javax.sql.DataSource;

/**
 * The stored work and its states, in plain SQL: pending -> running (claimed until the claim
 * expires or its process stops beating) -> done, or failed (retried at next_attempt_at) -> parked
 * after the last attempt. Claims use {@code FOR UPDATE SKIP LOCKED}, so any number of processes
 * share the work.
 * <p>
 * Items of one chat (a chat key) are claimed through the chat's lane ({@code work_lane}): one
 * worker at a time holds a lane and takes a run of its consecutive due items, so per-chat order
 * costs an indexed lookup of due lanes, not a scan of the backlog. One claim takes the runs of
 * many lanes and one commit records them, so a burst over many chats costs a few statements,
 * not a few per chat. Every lane claimed carries a new token (fencing): outcomes, extensions and
 * releases count only while the token still matches.
 * This class is the only writer of {@code work_item}, {@code work_lane} and {@code work_staged}.
 */
public final class WorkQueue {
    private final DataSource dataSource;

    public WorkQueue(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /** Work to schedule, keyed by its source: scheduling the same source twice schedules it once. */
    public record NewWork(String kind, String sourceKey, long sourceId, String chatKey) {
    }

    /** A lane taken for new work: due now unless it is claimed (then its run's end makes it due). */
    private static final String LANE_DUE = """
            ON CONFLICT (kind, chat_key) DO UPDATE SET due_at = now()
             WHERE work_lane.claim_token IS NULL AND (work_lane.due_at IS NULL OR work_lane.due_at > now())""";

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
     * becomes due now; a claimed one is made due when its run is finished. The uncorrelated
     * sub-select runs once, before the first item takes its id, and runs {@code lanes} to its end.
     */
    public static String scheduleFrom(String source) {
        return """
                lanes AS (
                    INSERT INTO work_lane (kind, chat_key, due_at)
                    SELECT DISTINCT kind, chat_key, now() FROM %1$s WHERE chat_key IS NOT NULL ORDER BY kind, chat_key
                    %2$s
                    RETURNING 1),
                items AS (
                    INSERT INTO work_item (kind, source_key, source_id, chat_key)
                    SELECT kind, source_key, source_id, chat_key FROM %1$s
                     WHERE (SELECT count(*) FROM lanes) >= 0
                     ORDER BY o
                    ON CONFLICT ON CONSTRAINT work_item_source DO NOTHING
                    RETURNING id, source_id, source_key)""".formatted(source, LANE_DUE);
    }

    private static final String SCHEDULE = """
            WITH new_work AS (
                SELECT * FROM unnest(?::text[], ?::text[], ?::bigint[], ?::text[]) WITH ORDINALITY AS n(kind, source_key, source_id, chat_key, o)),
            %s
            SELECT count(*) FROM items""".formatted(scheduleFrom("new_work"));

    /**
     * A CTE, {@code staged}, that stages the rows of the relation {@code source} (kind, source_key,
     * source_id, chat_key, o) in the order of {@code o}: work that {@link #scheduleStaged} turns
     * into items after the caller's transaction committed, for intake whose answer must not wait
     * for lanes and work items. Staged work is scheduled once, however often it is staged.
     */
    public static String stageFrom(String source) {
        return """
                staged AS (
                    INSERT INTO work_staged (kind, source_key, source_id, chat_key)
                    SELECT kind, source_key, source_id, chat_key FROM %s ORDER BY o
                    RETURNING 1)""".formatted(source);
    }

    // One scheduler at a time in the whole database: two taking turns on disjoint staged rows
    // could lock one chat's lane in the other order and give a later item the lower id.
    private static final String LOCK_STAGED = "SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.work_staged'))";

    // The rows to take are found through the primary key: insert/delete churn leaves the heap full
    // of dead rows until autovacuum's next round, and a sequential scan read 600-1,000 pages of them
    // to take 12-74 rows.
    static final String SCHEDULE_STAGED = """
            WITH taken AS (
                DELETE FROM work_staged WHERE id = ANY (ARRAY(SELECT id FROM work_staged ORDER BY id LIMIT ?))
                RETURNING kind, source_key, source_id, chat_key, id AS o),
            %s
            SELECT count(*) FROM taken""".formatted(scheduleFrom("taken"));

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

    // A single lane, taken before its item is written (see scheduleFrom).
    private static final String LOCK_LANE = "INSERT INTO work_lane (kind, chat_key, due_at) VALUES (?, ?, now()) " + LANE_DUE;

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
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    // Items put back to pending below their lane's head (retry, replay, schedule again): the head
    // moves back to them. A claimed lane gets them when its run is finished (see FINISH_LANES).
    private static final String REOPEN_LANES = """
            INSERT INTO work_lane (kind, chat_key, due_at, head_id)
            SELECT r.kind, r.chat_key, now(), min(r.id) FROM unnest(?::text[], ?::text[], ?::bigint[]) AS r(kind, chat_key, id)
             WHERE r.chat_key IS NOT NULL GROUP BY r.kind, r.chat_key ORDER BY r.kind, r.chat_key
            ON CONFLICT (kind, chat_key) DO UPDATE SET head_id = LEAST(work_lane.head_id, EXCLUDED.head_id),
                   due_at = CASE WHEN work_lane.claim_token IS NULL THEN now() ELSE work_lane.due_at END""";

    private record Reopened(String kind, String chatKey, long id) {
    }

    /** Runs {@code update} (of work_item, returning kind, chat_key, id) and reopens the lanes of the items it touched. */
    private static int reopen(Connection c, PreparedStatement update) throws SQLException {
        List<Reopened> touched = new ArrayList<>();
        try (ResultSet rs = update.executeQuery()) {
            while (rs.next()) {
                touched.add(new Reopened(rs.getString(1), rs.getString(2), rs.getLong(3)));
            }
        }
        if (touched.stream().anyMatch(r -> r.chatKey() != null)) {
            try (PreparedStatement ps = c.prepareStatement(REOPEN_LANES)) {
                ps.setArray(1, c.createArrayOf("text", touched.stream().map(Reopened::kind).toArray()));
                ps.setArray(2, c.createArrayOf("text", touched.stream().map(Reopened::chatKey).toArray()));
                ps.setArray(3, c.createArrayOf("bigint", touched.stream().map(Reopened::id).toArray()));
                ps.executeUpdate();
            }
        }
        return touched.size();
    }

    /** Schedules one item, or runs an existing one again from the start (done, parked or still retrying). */
    public static void scheduleAgain(Connection transaction, NewWork work) throws SQLException {
        if (work.chatKey() != null) {
            try (PreparedStatement ps = transaction.prepareStatement(LOCK_LANE)) {
                ps.setString(1, work.kind());
                ps.setString(2, work.chatKey());
                ps.executeUpdate();
            }
        }
        try (PreparedStatement ps = transaction.prepareStatement("""
                INSERT INTO work_item (kind, source_key, source_id, chat_key) VALUES (?, ?, ?, ?)
                ON CONFLICT ON CONSTRAINT work_item_source DO UPDATE
                   SET state = 'pending', attempts = 0, next_attempt_at = now(), claimed_by = NULL, claim_expires_at = NULL,
                       claim_token = NULL, last_error = NULL, done_at = NULL, updated_at = now()
                RETURNING kind, chat_key, id""")) {
            ps.setString(1, work.kind());
            ps.setString(2, work.sourceKey());
            ps.setLong(3, work.sourceId());
            ps.setString(4, work.chatKey());
            reopen(transaction, ps);
        }
    }

    // A claimed item's next_attempt_at is its claim's expiry: should its worker vanish, it is due then.
    private static final String CLAIM_SET = """
            state = 'running', attempts = w.attempts + 1, claimed_by = ?, claim_token = %s,
            claim_expires_at = now() + make_interval(secs => ?), next_attempt_at = now() + make_interval(secs => ?), updated_at = now()""";

    private static final String CLAIM_UNLANED = """
            WITH due AS (
                SELECT id FROM work_item
                 WHERE chat_key IS NULL AND state IN ('pending', 'failed', 'running') AND next_attempt_at <= now()
                   AND kind = ANY (?::text[])
                 ORDER BY next_attempt_at, id LIMIT 1
                 FOR UPDATE SKIP LOCKED),
                 token AS (SELECT nextval('work_claim_token') AS value)
            UPDATE work_item w SET %s FROM due, token WHERE w.id = due.id
            RETURNING w.id, w.kind, w.source_key, w.source_id, w.attempts, w.claim_token""".formatted(CLAIM_SET.formatted("token.value"));

    /**
     * Claims the due item without a chat that waited longest among the given kinds (those this
     * process has a handler for: other kinds are left for a process that has one), or returns null.
     */
    public WorkRun claimUnlaned(String worker, Duration claim, Collection<String> kinds) throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(CLAIM_UNLANED)) {
            ps.setArray(1, c.createArrayOf("text", kinds.toArray()));
            ps.setString(2, worker);
            setSeconds(ps, 3, claim);
            setSeconds(ps, 4, claim);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return null;
                }
                WorkItem item = new WorkItem(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getLong(4), null, rs.getInt(5), rs.getLong(6));
                return new WorkRun(item.claimToken(), item.kind(), null, 0, false, List.of(item));
            }
        }
    }

    private static final String DUE_LANES = """
            SELECT kind, chat_key, head_id FROM work_lane
             WHERE due_at <= now() AND kind = ANY (?::text[]) ORDER BY due_at LIMIT ? FOR UPDATE SKIP LOCKED""";
    // Each lane's first unfinished items from its head, in id order (the partial index on unfinished
    // items of a chat serves each lane): for an ordered kind all of them, so the first one not due
    // ends the run; otherwise only the due ones.
    private static final String LANES_ITEMS = """
            SELECT l.o, i.id, i.source_key, i.source_id, i.attempts, i.next_attempt_at <= now(), i.next_attempt_at
              FROM unnest(?::text[], ?::text[], ?::bigint[], ?::boolean[]) WITH ORDINALITY AS l(kind, chat_key, head, ordered, o)
             CROSS JOIN LATERAL (SELECT w.id, w.source_key, w.source_id, w.attempts, w.next_attempt_at FROM work_item w
                     WHERE w.kind = l.kind AND w.chat_key = l.chat_key AND w.id >= l.head AND w.state NOT IN ('done', 'parked')
                       AND (l.ordered OR w.next_attempt_at <= now())
                     ORDER BY w.id LIMIT ?) i
             ORDER BY l.o, i.id""";
    private static final String LANE_NEXT_DUE = """
            SELECT min(next_attempt_at), min(id) FROM work_item WHERE kind = ? AND chat_key = ? AND id >= ? AND state NOT IN ('done', 'parked')""";
    private static final String SET_LANES_ASIDE = """
            UPDATE work_lane l SET due_at = u.due, head_id = u.head
              FROM unnest(?::text[], ?::text[], ?::timestamptz[], ?::bigint[]) AS u(kind, chat_key, due, head)
             WHERE l.kind = u.kind AND l.chat_key = u.chat_key""";
    private static final String CLAIM_LANES = """
            UPDATE work_lane l SET due_at = now() + make_interval(secs => ?), claimed_by = ?, head_id = u.head,
                   claim_token = nextval('work_claim_token')
              FROM unnest(?::text[], ?::text[], ?::bigint[]) WITH ORDINALITY AS u(kind, chat_key, head, o)
             WHERE l.kind = u.kind AND l.chat_key = u.chat_key
            RETURNING u.o, l.claim_token""";
    // The lanes still holding their tokens are looked up by key first, and the items joined by id
    // alone: checking the token through the item's own kind and chat let a plan cached while
    // work_item was small walk every item of the kind for each item claimed.
    static final String CLAIM_ITEMS = """
            WITH held AS MATERIALIZED (
                SELECT r.token FROM unnest(?::bigint[], ?::text[], ?::text[]) AS r(token, kind, chat_key)
                  JOIN work_lane l ON l.kind = r.kind AND l.chat_key = r.chat_key AND l.claim_token = r.token),
                 items AS MATERIALIZED (
                SELECT u.id, u.token FROM unnest(?::bigint[], ?::bigint[]) AS u(id, token) WHERE u.token IN (SELECT token FROM held))
            UPDATE work_item w SET %s FROM items u WHERE w.id = u.id
            RETURNING u.token""".formatted(CLAIM_SET.formatted("u.token"));

    /** A due lane locked by a claim: what the lane row says, and its first items. */
    private record DueLane(String kind, String chatKey, long head, boolean ordered, List<LaneItem> items) {
    }

    private record LaneItem(WorkItem item, boolean due, Timestamp dueAt) {
    }

    /**
     * The runs of the lane that has been due longest: up to {@code runSize} consecutive items of
     * one chat from its head ({@link #claimLanes} with one lane). Null when no lane has a run.
     */
    public WorkRun claimLane(String worker, Duration claim, int runSize, Collection<String> orderedKinds,
                             Collection<String> kinds) throws SQLException {
        List<WorkRun> runs = claimLanes(worker, claim, runSize, 1, orderedKinds, kinds).runs();
        return runs.isEmpty() ? null : runs.get(0);
    }

    /** What one claim took: its runs, and how many due lanes it looked at (some may have had nothing due). */
    public record Claimed(List<WorkRun> runs, int lanesLooked) {
        public int items() {
            return runs.stream().mapToInt(r -> r.items().size()).sum();
        }
    }

    /**
     * Claims the runs of up to {@code maxLanes} lanes that have been due longest, about
     * {@code runSize} items in all (shared out among the lanes, so one busy chat gets a whole run
     * when it is the only one due). For an ordered kind a run is the due prefix from the lane's
     * head (an item waiting for its retry holds the items after it); otherwise every due item
     * among them. A lane with nothing due is set to when it will be (or idle): intake, which locks
     * the lane too, cannot slip items past that. Each lane gets its own token.
     * <p>
     * The lanes are claimed in one short transaction and their items after it, while the lanes
     * carry the tokens: intake, which waits for a lane's lock, never waits behind the items' claim.
     */
    public Claimed claimLanes(String worker, Duration claim, int runSize, int maxLanes, Collection<String> orderedKinds,
                              Collection<String> kinds) throws SQLException {
        // Lanes that turned out to have nothing due were set aside by the attempt: the next one looks further.
        Claimed claimed = new Claimed(List.of(), 0);
        for (int attempt = 0; attempt < 16 && claimed.runs().isEmpty(); attempt++) {
            claimed = claimOnce(worker, claim, runSize, maxLanes, orderedKinds, kinds);
            if (claimed.lanesLooked() == 0) {
                break;
            }
        }
        return claimed;
    }

    private Claimed claimOnce(String worker, Duration claim, int runSize, int maxLanes, Collection<String> orderedKinds,
                              Collection<String> kinds) throws SQLException {
        Claimed lanes = inRedoableTransaction(dataSource, c -> claimLanes(c, worker, claim, runSize, maxLanes, orderedKinds, kinds));
        if (lanes.runs().isEmpty()) {
            return lanes;
        }
        Map<Long, Integer> claimed;
        try {
            claimed = inRedoableTransaction(dataSource, c -> claimItems(c, worker, claim, lanes.runs()));
        } catch (SQLException | RuntimeException e) {
            // No worker here will run these lanes: finish them as runs given back whole, now, not
            // when the claim expires minutes later. An item the failed statement did claim after all
            // keeps its claim's expiry as its due time, so the lane's next run waits for it.
            try {
                inRedoableTransaction(dataSource, c -> finishLanes(c, lanes.runs().stream()
                        .map(run -> new Finished(run, List.of(), run.items())).toList(), false));
            } catch (SQLException | RuntimeException release) {
                e.addSuppressed(release);
            }
            throw e;
        }
        List<WorkRun> held = new ArrayList<>();
        for (WorkRun run : lanes.runs()) {
            if (claimed.getOrDefault(run.token(), 0) == run.items().size()) {
                held.add(run);
            } else {
                // Taken over meanwhile: whatever this claim got goes back (only while it still carries the token).
                finish(run, List.of(), run.items());
            }
        }
        return new Claimed(held, lanes.lanesLooked());
    }

    private static Claimed claimLanes(Connection c, String worker, Duration claim, int runSize, int maxLanes,
                                      Collection<String> orderedKinds, Collection<String> kinds) throws SQLException {
        List<DueLane> lanes = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(DUE_LANES)) {
            ps.setArray(1, c.createArrayOf("text", kinds.toArray()));
            ps.setInt(2, maxLanes);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String kind = rs.getString(1);
                    lanes.add(new DueLane(kind, rs.getString(2), rs.getLong(3), orderedKinds.contains(kind), new ArrayList<>()));
                }
            }
        }
        if (lanes.isEmpty()) {
            return new Claimed(List.of(), 0);
        }
        readLaneItems(c, lanes, Math.max(1, (runSize + lanes.size() - 1) / lanes.size()));
        List<DueLane> withRun = new ArrayList<>();
        List<DueLane> aside = new ArrayList<>();
        for (DueLane lane : lanes) {
            (lane.items().isEmpty() || !lane.items().get(0).due() ? aside : withRun).add(lane);
        }
        setAside(c, aside);
        return new Claimed(claim(c, worker, claim, withRun), lanes.size());
    }

    private static void readLaneItems(Connection c, List<DueLane> lanes, int perLane) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(LANES_ITEMS)) {
            ps.setArray(1, c.createArrayOf("text", lanes.stream().map(DueLane::kind).toArray()));
            ps.setArray(2, c.createArrayOf("text", lanes.stream().map(DueLane::chatKey).toArray()));
            ps.setArray(3, c.createArrayOf("bigint", lanes.stream().map(DueLane::head).toArray()));
            ps.setArray(4, c.createArrayOf("boolean", lanes.stream().map(DueLane::ordered).toArray()));
            ps.setInt(5, perLane);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    DueLane lane = lanes.get(rs.getInt(1) - 1);
                    lane.items().add(new LaneItem(new WorkItem(rs.getLong(2), lane.kind(), rs.getString(3), rs.getLong(4),
                            lane.chatKey(), rs.getInt(5) + 1, 0), rs.getBoolean(6), rs.getTimestamp(7)));
                }
            }
        }
    }

    /** Lanes with nothing due: due when their first item is (null: idle until intake or a retry makes them due). */
    private static void setAside(Connection c, List<DueLane> lanes) throws SQLException {
        if (lanes.isEmpty()) {
            return;
        }
        List<Timestamp> dues = new ArrayList<>();
        List<Long> heads = new ArrayList<>();
        for (DueLane lane : lanes) {
            Timestamp due = lane.items().isEmpty() ? null : lane.items().get(0).dueAt();
            long head = lane.items().isEmpty() ? lane.head() : lane.items().get(0).item().id();
            if (!lane.ordered()) {
                // Only due items were read; the first due item need not be the first unfinished one.
                try (PreparedStatement ps = c.prepareStatement(LANE_NEXT_DUE)) {
                    ps.setString(1, lane.kind());
                    ps.setString(2, lane.chatKey());
                    ps.setLong(3, lane.head());
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        due = rs.getTimestamp(1);
                        head = rs.getObject(2) == null ? lane.head() : rs.getLong(2);
                    }
                }
            }
            dues.add(due);
            heads.add(head);
        }
        try (PreparedStatement ps = c.prepareStatement(SET_LANES_ASIDE)) {
            ps.setArray(1, c.createArrayOf("text", lanes.stream().map(DueLane::kind).toArray()));
            ps.setArray(2, c.createArrayOf("text", lanes.stream().map(DueLane::chatKey).toArray()));
            ps.setArray(3, c.createArrayOf("timestamptz", dues.toArray()));
            ps.setArray(4, c.createArrayOf("bigint", heads.toArray()));
            ps.executeUpdate();
        }
    }

    /** Claims these lanes (each with a new token); their runs (the due prefix, or the due items) are claimed after. */
    private static List<WorkRun> claim(Connection c, String worker, Duration claim, List<DueLane> lanes) throws SQLException {
        if (lanes.isEmpty()) {
            return List.of();
        }
        long[] tokens = new long[lanes.size()];
        try (PreparedStatement ps = c.prepareStatement(CLAIM_LANES)) {
            setSeconds(ps, 1, claim);
            ps.setString(2, worker);
            ps.setArray(3, c.createArrayOf("text", lanes.stream().map(DueLane::kind).toArray()));
            ps.setArray(4, c.createArrayOf("text", lanes.stream().map(DueLane::chatKey).toArray()));
            // An ordered lane's head moves to its first unfinished item; an unordered one keeps it.
            ps.setArray(5, c.createArrayOf("bigint", lanes.stream()
                    .map(l -> l.ordered() ? l.items().get(0).item().id() : l.head()).toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    tokens[rs.getInt(1) - 1] = rs.getLong(2);
                }
            }
        }
        List<WorkRun> runs = new ArrayList<>(lanes.size());
        for (int i = 0; i < lanes.size(); i++) {
            DueLane lane = lanes.get(i);
            List<WorkItem> run = new ArrayList<>();
            for (LaneItem item : lane.items()) {
                if (!item.due()) {
                    break;
                }
                WorkItem w = item.item();
                run.add(new WorkItem(w.id(), w.kind(), w.sourceKey(), w.sourceId(), w.chatKey(), w.attempts(), tokens[i]));
            }
            long head = lane.ordered() ? run.get(0).id() : lane.head();
            runs.add(new WorkRun(tokens[i], lane.kind(), lane.chatKey(), head, lane.ordered(), List.copyOf(run)));
        }
        return runs;
    }

    /** @return items claimed per token: only those of lanes that still carry the token */
    private static Map<Long, Integer> claimItems(Connection c, String worker, Duration claim, List<WorkRun> runs) throws SQLException {
        List<Long> ids = new ArrayList<>();
        List<Long> itemTokens = new ArrayList<>();
        for (WorkRun run : runs) {
            for (WorkItem item : run.items()) {
                ids.add(item.id());
                itemTokens.add(run.token());
            }
        }
        try (PreparedStatement ps = c.prepareStatement(CLAIM_ITEMS)) {
            ps.setArray(1, c.createArrayOf("bigint", runs.stream().map(WorkRun::token).toArray()));
            ps.setArray(2, c.createArrayOf("text", runs.stream().map(WorkRun::kind).toArray()));
            ps.setArray(3, c.createArrayOf("text", runs.stream().map(WorkRun::chatKey).toArray()));
            ps.setArray(4, c.createArrayOf("bigint", ids.toArray()));
            ps.setArray(5, c.createArrayOf("bigint", itemTokens.toArray()));
            ps.setString(6, worker);
            setSeconds(ps, 7, claim);
            setSeconds(ps, 8, claim);
            return tokens(ps);
        }
    }

    /** What became of one item of a run. */
    /** @param result null, or why a done item's effect never happened ({@code undeliverable}): work_item.outcome */
    public record Outcome(WorkItem item, String state, String error, Instant nextAttemptAt, String result) {
        public static Outcome done(WorkItem item) {
            return new Outcome(item, "done", null, null, null);
        }

        public static Outcome failed(WorkItem item, String error, Instant nextAttemptAt) {
            return new Outcome(item, "failed", Objects.requireNonNull(error), Objects.requireNonNull(nextAttemptAt), null);
        }

        public static Outcome parked(WorkItem item, String error) {
            return new Outcome(item, "parked", Objects.requireNonNull(error), null, null);
        }

        /** Done for good without its effect (refused permanently, e.g. the bot was blocked): never retried. */
        public static Outcome undeliverable(WorkItem item, String reason) {
            return new Outcome(item, "done", Objects.requireNonNull(reason), null, "undeliverable");
        }

        /**
         * Back to pending until {@code until}, its attempt not counted and its last error kept: a
         * limit said "not yet" ({@link DeferReason}). A run stops at it, and its lane waits for it.
         */
        public static Outcome deferred(WorkItem item, Instant until) {
            return new Outcome(item, "pending", null, Objects.requireNonNull(until), null);
        }

        public boolean isDeferred() {
            return "pending".equals(state);
        }

        /** An ordered run stops here and its chat waits for this item's next attempt. */
        public boolean holdsItsChat() {
            return "failed".equals(state) || isDeferred();
        }
    }

    // A deferred item (state pending) gives its attempt back and keeps the last error it had.
    // RECORD and UNCLAIM find a run's items by id alone. The token fences them by itself: a claim's
    // token is new, and every way out of 'running' clears it. With a "state = 'running'" condition
    // the planner read the partial index work_item_running instead, whose entries left by earlier
    // claims only vacuum removes (28,000-60,000 read for 163-312 items). They are planned at each
    // execution: a plan kept from a small work_item scans the whole table (67,000 rows for 24 items).
    private static final String RECORD = """
            UPDATE work_item w SET state = o.state, next_attempt_at = COALESCE(o.next_at, w.next_attempt_at),
                   attempts = CASE WHEN o.state = 'pending' THEN w.attempts - 1 ELSE w.attempts END,
                   last_error = CASE WHEN o.state = 'pending' THEN w.last_error ELSE o.error END,
                   done_at = CASE WHEN o.state = 'done' THEN now() END, outcome = o.result, claimed_by = NULL, claim_token = NULL,
                   claim_expires_at = NULL, updated_at = now()
              FROM unnest(?::bigint[], ?::text[], ?::text[], ?::timestamptz[], ?::text[], ?::bigint[])
                   AS o(id, state, error, next_at, result, token)
             WHERE w.id = o.id AND w.claim_token = o.token
            RETURNING o.token""";
    // Claimed but not run (an ordered run stopped at a failure, or the dispatcher is stopping): as before the claim.
    private static final String UNCLAIM = """
            UPDATE work_item w SET state = 'pending', attempts = w.attempts - 1, next_attempt_at = now(), claimed_by = NULL,
                   claim_token = NULL, claim_expires_at = NULL, updated_at = now()
              FROM unnest(?::bigint[], ?::bigint[]) AS u(id, token)
             WHERE w.id = u.id AND w.claim_token = u.token
            RETURNING u.token""";
    // The lanes of runs that end are locked first, in a statement of their own, so that the
    // statement finishing them reads work_item after every intake that held one of them committed
    // (a statement sees what committed before it began, and intake holds a lane until its commit).
    // SKIP LOCKED: intake holds a lane until its commit and may lock several in one transaction;
    // waiting for one while holding others could close a circle. A lane skipped is finished after.
    private static final String LOCK_ENDING_LANES = """
            SELECT u.o FROM unnest(?::text[], ?::text[], ?::bigint[]) WITH ORDINALITY AS u(kind, chat_key, token, o)
              JOIN work_lane l ON l.kind = u.kind AND l.chat_key = u.chat_key AND l.claim_token = u.token
               FOR UPDATE OF l %s""";
    // The head moves past what the run finished, unless retry or replay moved it back meanwhile
    // (then the lane is due now). A lane with nothing unfinished left goes idle until intake makes
    // it due; else it is due now, or when the failed item that stopped an ordered run is.
    static final String FINISH_LANES = """
            UPDATE work_lane l SET due_at = CASE WHEN l.head_id <> u.old_head THEN now() WHEN u.due IS NOT NULL THEN u.due
                       WHEN EXISTS (SELECT 1 FROM work_item w WHERE w.kind = l.kind AND w.chat_key = l.chat_key AND w.id >= u.new_head
                                       AND w.state NOT IN ('done', 'parked')) THEN now() END,
                   head_id = CASE WHEN l.head_id = u.old_head THEN u.new_head ELSE l.head_id END, claimed_by = NULL, claim_token = NULL
              FROM unnest(?::text[], ?::text[], ?::bigint[], ?::bigint[], ?::timestamptz[], ?::bigint[])
                   AS u(kind, chat_key, token, old_head, due, new_head)
             WHERE l.kind = u.kind AND l.chat_key = u.chat_key AND l.claim_token = u.token
            RETURNING u.token""";

    /**
     * What a worker did with a claimed run: {@code outcomes} of items it ran and, when the run
     * ends here, {@code notRun}: items it gives back (null: the run goes on, its lane stays claimed).
     */
    public record Finished(WorkRun run, List<Outcome> outcomes, List<WorkItem> notRun) {
        boolean ends() {
            return notRun != null;
        }
    }

    /**
     * Records outcomes of a run that goes on (in one commit).
     * @return false when the claim was lost (its token replaced)
     */
    public boolean record(WorkRun run, List<Outcome> outcomes) throws SQLException {
        return finish(List.of(new Finished(run, outcomes, null))).isEmpty();
    }

    /** {@link #finish(List)} of one run. @return false when its claim was lost */
    public boolean finish(WorkRun run, List<Outcome> outcomes, List<WorkItem> notRun) throws SQLException {
        return finish(List.of(new Finished(run, outcomes, notRun))).isEmpty();
    }

    /**
     * Records what workers did with runs, puts back what they did not run and releases the lanes
     * of runs that end, all in one commit. A lane is due again at once, or, for an ordered run that
     * stopped at a failed item, when that item's retry is due, or idle when nothing of it is left
     * to run. Only outcomes of items that still carry their run's token count (fencing); a run
     * whose claim was lost keeps its lane as it is.
     * @return the tokens of runs whose claim was lost (released or taken over)
     */
    public Set<Long> finish(List<Finished> finished) throws SQLException {
        List<Finished> skipped = new ArrayList<>();
        Set<Long> lost = recordAndRelease(finished, skipped);
        // Each lane intake held a moment ago on its own: a transaction that waits for one lane and
        // holds nothing else cannot be part of a circle. The outcomes are committed already, so a
        // failure here is retried here: recording them again would find them gone and drop the lane.
        for (Finished f : skipped) {
            if (releaseAlone(f).isEmpty()) {
                lost.add(f.run().token());
            }
        }
        return lost;
    }

    private Set<Long> releaseAlone(Finished finished) throws SQLException {
        for (int attempt = 1; ; attempt++) {
            try {
                return inRedoableTransaction(dataSource, c -> finishLanes(c, List.of(finished), false));
            } catch (SQLException e) {
                if (attempt == 3) {
                    throw e;
                }
                try {
                    Thread.sleep(200L * attempt);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    throw e;
                }
            }
        }
    }

    private Set<Long> recordAndRelease(List<Finished> finished, List<Finished> skipped) throws SQLException {
        // The lanes last: their locks, which intake waits for, are held only for the commit.
        return inRedoableTransaction(dataSource, c -> {
            Map<Long, Integer> recorded = recordOutcomes(c, finished);
            Map<Long, Integer> unclaimed = unclaim(c, finished);
            Set<Long> lost = new HashSet<>();
            List<Finished> ending = new ArrayList<>();
            for (Finished f : finished) {
                long token = f.run().token();
                if (recorded.getOrDefault(token, 0) != f.outcomes().size()
                        || unclaimed.getOrDefault(token, 0) != (f.ends() ? f.notRun().size() : 0)) {
                    lost.add(token);
                } else if (f.ends() && f.run().laned()) {
                    ending.add(f);
                }
            }
            Set<Long> released = finishLanes(c, ending, true);
            ending.stream().filter(f -> !released.contains(f.run().token())).forEach(skipped::add);
            return lost;
        });
    }

    /** @return the tokens of the lanes released; with {@code skipLocked}, lanes locked elsewhere right now are left as they are */
    private static Set<Long> finishLanes(Connection c, List<Finished> ending, boolean skipLocked) throws SQLException {
        List<Finished> locked = lockEndingLanes(c, ending, skipLocked);
        if (locked.isEmpty()) {
            return Set.of();
        }
        List<Timestamp> dues = new ArrayList<>();
        List<Long> heads = new ArrayList<>();
        for (Finished f : locked) {
            WorkRun run = f.run();
            Outcome last = f.outcomes().isEmpty() ? null : f.outcomes().get(f.outcomes().size() - 1);
            Timestamp due = null;
            long head = run.headId();
            if (last != null && last.isDeferred()) {
                // A limit of the chat (or its bot) holds every item of it until then, in order.
                head = run.ordered() ? last.item().id() : run.headId();
                due = Timestamp.from(last.nextAttemptAt());
            } else if (run.ordered() && last != null && "failed".equals(last.state())) {
                // The chat waits for this item's retry.
                head = last.item().id();
                due = Timestamp.from(last.nextAttemptAt());
            } else if (run.ordered() && !run.items().isEmpty()) {
                // An ordered run is the chat's consecutive items from its head: the head moves past what finished.
                head = f.notRun().isEmpty() ? run.items().get(run.items().size() - 1).id() + 1 : f.notRun().get(0).id();
            }
            dues.add(due);
            heads.add(head);
        }
        try (PreparedStatement ps = c.prepareStatement(FINISH_LANES)) {
            bindLaneTokens(c, ps, locked);
            ps.setArray(4, c.createArrayOf("bigint", locked.stream().map(f -> f.run().headId()).toArray()));
            ps.setArray(5, c.createArrayOf("timestamptz", dues.toArray()));
            ps.setArray(6, c.createArrayOf("bigint", heads.toArray()));
            return new HashSet<>(tokens(ps).keySet());
        }
    }

    /** @return the runs whose lanes this transaction now holds, still carrying their tokens */
    private static List<Finished> lockEndingLanes(Connection c, List<Finished> ending, boolean skipLocked) throws SQLException {
        if (ending.isEmpty()) {
            return List.of();
        }
        List<Finished> locked = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(LOCK_ENDING_LANES.formatted(skipLocked ? "SKIP LOCKED" : ""))) {
            bindLaneTokens(c, ps, ending);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    locked.add(ending.get(rs.getInt(1) - 1));
                }
            }
        }
        return locked;
    }

    /** Parameters 1 to 3: the runs' lanes and tokens. */
    private static void bindLaneTokens(Connection c, PreparedStatement ps, List<Finished> runs) throws SQLException {
        ps.setArray(1, c.createArrayOf("text", runs.stream().map(f -> f.run().kind()).toArray()));
        ps.setArray(2, c.createArrayOf("text", runs.stream().map(f -> f.run().chatKey()).toArray()));
        ps.setArray(3, c.createArrayOf("bigint", runs.stream().map(f -> f.run().token()).toArray()));
    }

    private static Map<Long, Integer> recordOutcomes(Connection c, List<Finished> finished) throws SQLException {
        List<Outcome> outcomes = new ArrayList<>();
        List<Long> tokens = new ArrayList<>();
        for (Finished f : finished) {
            outcomes.addAll(f.outcomes());
            f.outcomes().forEach(o -> tokens.add(f.run().token()));
        }
        if (outcomes.isEmpty()) {
            return Map.of();
        }
        try (PreparedStatement ps = PlannedEachTime.prepare(c, RECORD)) {
            ps.setArray(1, c.createArrayOf("bigint", outcomes.stream().map(o -> o.item().id()).toArray()));
            ps.setArray(2, c.createArrayOf("text", outcomes.stream().map(Outcome::state).toArray()));
            ps.setArray(3, c.createArrayOf("text", outcomes.stream().map(Outcome::error).toArray()));
            ps.setArray(4, c.createArrayOf("timestamptz", outcomes.stream()
                    .map(o -> o.nextAttemptAt() == null ? null : Timestamp.from(o.nextAttemptAt())).toArray()));
            ps.setArray(5, c.createArrayOf("text", outcomes.stream().map(Outcome::result).toArray()));
            ps.setArray(6, c.createArrayOf("bigint", tokens.toArray()));
            return tokens(ps);
        }
    }

    private static Map<Long, Integer> unclaim(Connection c, List<Finished> finished) throws SQLException {
        List<Long> ids = new ArrayList<>();
        List<Long> tokens = new ArrayList<>();
        for (Finished f : finished) {
            if (f.ends()) {
                f.notRun().forEach(item -> {
                    ids.add(item.id());
                    tokens.add(f.run().token());
                });
            }
        }
        if (ids.isEmpty()) {
            return Map.of();
        }
        try (PreparedStatement ps = PlannedEachTime.prepare(c, UNCLAIM)) {
            ps.setArray(1, c.createArrayOf("bigint", ids.toArray()));
            ps.setArray(2, c.createArrayOf("bigint", tokens.toArray()));
            return tokens(ps);
        }
    }

    /** Rows per token of a statement returning one token per row it changed. */
    private static Map<Long, Integer> tokens(PreparedStatement ps) throws SQLException {
        Map<Long, Integer> counts = new HashMap<>();
        try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                counts.merge(rs.getLong(1), 1, Integer::sum);
            }
        }
        return counts;
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
            Object[] array = tokens.toArray();
            // SKIP LOCKED: intake may hold one of these lanes while it wants another; waiting here
            // could close a circle. A lane skipped now is extended at the next third.
            try (PreparedStatement ps = c.prepareStatement("""
                    UPDATE work_lane SET due_at = now() + make_interval(secs => ?)
                     WHERE (kind, chat_key) IN (SELECT kind, chat_key FROM work_lane
                             WHERE claimed_by = ? AND claim_token = ANY (?::bigint[]) FOR UPDATE SKIP LOCKED)""")) {
                setSeconds(ps, 1, claim);
                ps.setString(2, worker);
                ps.setArray(3, c.createArrayOf("bigint", array));
                ps.executeUpdate();
            }
            try (PreparedStatement ps = c.prepareStatement("""
                    UPDATE work_item SET claim_expires_at = now() + make_interval(secs => ?), next_attempt_at = now() + make_interval(secs => ?)
                     WHERE state = 'running' AND claimed_by = ? AND claim_token = ANY (?::bigint[])
                    RETURNING claim_token""")) {
                setSeconds(ps, 1, claim);
                setSeconds(ps, 2, claim);
                ps.setString(3, worker);
                ps.setArray(4, c.createArrayOf("bigint", array));
                TreeSet<Long> held = new TreeSet<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        held.add(rs.getLong(1));
                    }
                }
                return List.copyOf(held);
            }
        }
    }

    // Dead: no heartbeat row, or one older than the limit. A process never judges itself.
    private static final String DEAD = """
            %s.claimed_by <> ? AND NOT EXISTS (SELECT 1 FROM runner_heartbeat h
                WHERE h.process_id = %s.claimed_by AND h.beat_at >= now() - make_interval(secs => ?))""";

    /**
     * Releases the claims of processes that stopped beating: their items are due at once (they
     * keep the attempt they were claimed for) and their lanes free, with new tokens to come, so a
     * late outcome of such a process is dropped.
     * @return the items released
     */
    public int releaseClaimsOfDeadProcesses(String self, Duration silence) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            // Items first: a lane freed before its items would be found with nothing due.
            int released;
            try (PreparedStatement ps = c.prepareStatement("""
                    UPDATE work_item w SET state = 'pending', next_attempt_at = now(), claimed_by = NULL, claim_token = NULL,
                           claim_expires_at = NULL, last_error = 'claim released: ' || w.claimed_by || ' stopped beating', updated_at = now()
                     WHERE w.state = 'running' AND""" + " " + DEAD.formatted("w", "w"))) {
                ps.setString(1, self);
                setSeconds(ps, 2, silence);
                released = ps.executeUpdate();
            }
            // SKIP LOCKED, as in extend: a lane intake holds right now is freed at the next beat.
            try (PreparedStatement ps = c.prepareStatement("""
                    UPDATE work_lane SET due_at = now(), claimed_by = NULL, claim_token = NULL
                     WHERE (kind, chat_key) IN (SELECT kind, chat_key FROM work_lane l
                             WHERE l.claimed_by IS NOT NULL AND""" + " " + DEAD.formatted("l", "l") + " FOR UPDATE SKIP LOCKED)")) {
                ps.setString(1, self);
                setSeconds(ps, 2, silence);
                ps.executeUpdate();
            }
            return released;
        }
    }

    /** Parked (or failed) items back to pending, due now, attempts reset. {@code id} null: every parked item. */
    public int retry(Long id) throws SQLException {
        String sql = "UPDATE work_item SET state = 'pending', attempts = 0, next_attempt_at = now(), last_error = NULL,"
                + " updated_at = now() WHERE " + (id == null ? "state = 'parked'" : "id = ? AND state IN ('parked', 'failed')")
                + " RETURNING kind, chat_key, id";
        return inTransaction(dataSource, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql)) {
                if (id != null) {
                    ps.setLong(1, id);
                }
                return reopen(c, ps);
            }
        });
    }

    /** An explicit re-run of done items of one kind created since a time; never implicit. */
    public int replay(String kind, Instant since) throws SQLException {
        return inTransaction(dataSource, c -> {
            try (PreparedStatement ps = c.prepareStatement(
                    "UPDATE work_item SET state = 'pending', attempts = 0, next_attempt_at = now(), done_at = NULL, updated_at = now()"
                            + " WHERE kind = ? AND state = 'done' AND created_at >= ? RETURNING kind, chat_key, id")) {
                ps.setString(1, kind);
                ps.setTimestamp(2, Timestamp.from(since));
                return reopen(c, ps);
            }
        });
    }

    /**
     * A DELETE of the items ({@code w}) that {@code condition} picks with the relation {@code source},
     * returning one row each, for retention's statement that removes old sources and their done
     * items together: this class stays the only writer of {@code work_item}.
     */
    public static String deleteWhere(String source, String condition) {
        return "DELETE FROM work_item w USING " + source + " WHERE " + condition + " RETURNING 1";
    }

    private static void setSeconds(PreparedStatement ps, int index, Duration duration) throws SQLException {
        ps.setDouble(index, duration.toMillis() / 1000.0);
    }

    public DataSource dataSource() {
        return dataSource;
    }
}
