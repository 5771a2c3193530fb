package io.chatintake.work;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.TreeSet;
import java.util.function.Predicate;
import javax.sql.DataSource;

/**
 * The stored work and its states, in plain SQL: pending -> running (claimed until the claim
 * expires or its process stops beating) -> done, or failed (retried at next_attempt_at) -> parked
 * after the last attempt. Claims use {@code FOR UPDATE SKIP LOCKED}, so any number of processes
 * share the work.
 * <p>
 * Items of one chat (a chat key) are claimed through the chat's lane ({@code work_lane}): one
 * worker at a time holds a lane and takes a run of its consecutive due items, so per-chat order
 * costs an indexed lookup of due lanes, not a scan of the backlog. Every claim carries a new
 * token (fencing): outcomes, extensions and releases count only while the token still matches.
 * This class is the only writer of {@code work_item} and {@code work_lane}.
 */
public final class WorkQueue {
    private final DataSource dataSource;

    public WorkQueue(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /** Work to schedule, keyed by its source: scheduling the same source twice schedules it once. */
    public record NewWork(String kind, String sourceKey, long sourceId, String chatKey) {
    }

    /** A work item this transaction created, for intake's fast path. */
    public record Scheduled(long workItemId, long sourceId, String sourceKey) {
    }

    private static final String SCHEDULE = """
            INSERT INTO work_item (kind, source_key, source_id, chat_key)
            SELECT n.kind, n.source_key, n.source_id, n.chat_key FROM unnest(?::text[], ?::text[], ?::bigint[], ?::text[]) WITH ORDINALITY AS n(kind, source_key, source_id, chat_key, o)
             ORDER BY o
            ON CONFLICT ON CONSTRAINT work_item_source DO NOTHING
            RETURNING id, source_id, source_key""";

    /**
     * Schedules work inside the caller's transaction (the one that stored its source), so that
     * stored means scheduled. Ids follow the list's order, which is the per-chat order.
     */
    public static List<Scheduled> schedule(Connection transaction, List<NewWork> work) throws SQLException {
        if (work.isEmpty()) {
            return List.of();
        }
        lockLanes(transaction, work);
        try (PreparedStatement ps = transaction.prepareStatement(SCHEDULE)) {
            ps.setArray(1, transaction.createArrayOf("text", work.stream().map(NewWork::kind).toArray()));
            ps.setArray(2, transaction.createArrayOf("text", work.stream().map(NewWork::sourceKey).toArray()));
            ps.setArray(3, transaction.createArrayOf("bigint", work.stream().map(NewWork::sourceId).toArray()));
            ps.setArray(4, transaction.createArrayOf("text", work.stream().map(NewWork::chatKey).toArray()));
            List<Scheduled> scheduled = new ArrayList<>(work.size());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    scheduled.add(new Scheduled(rs.getLong(1), rs.getLong(2), rs.getString(3)));
                }
            }
            return scheduled;
        }
    }


    // Taken before the items are inserted and held to commit: items of one chat then get their
    // ids in commit order (a lane's head never passes an item committed later), and a worker that
    // finds the lane empty either sees these items or makes the lane due again after this commit.
    // An unclaimed lane becomes due now; a claimed one is made due when its run is finished.
    private static final String LOCK_LANES = """
            INSERT INTO work_lane (kind, chat_key, due_at)
            SELECT n.kind, n.chat_key, now() FROM unnest(?::text[], ?::text[]) WITH ORDINALITY AS n(kind, chat_key, o) ORDER BY o
            ON CONFLICT (kind, chat_key) DO UPDATE SET due_at = now()
             WHERE work_lane.claim_token IS NULL AND (work_lane.due_at IS NULL OR work_lane.due_at > now())""";

    private static void lockLanes(Connection transaction, Collection<NewWork> work) throws SQLException {
        // Sorted, so that two transactions locking the same lanes never wait for each other in a circle.
        TreeSet<List<String>> lanes = new TreeSet<>((a, b) -> a.get(0).equals(b.get(0)) ? a.get(1).compareTo(b.get(1)) : a.get(0).compareTo(b.get(0)));
        work.stream().filter(w -> w.chatKey() != null).forEach(w -> lanes.add(List.of(w.kind(), w.chatKey())));
        if (lanes.isEmpty()) {
            return;
        }
        try (PreparedStatement ps = transaction.prepareStatement(LOCK_LANES)) {
            ps.setArray(1, transaction.createArrayOf("text", lanes.stream().map(l -> l.get(0)).toArray()));
            ps.setArray(2, transaction.createArrayOf("text", lanes.stream().map(l -> l.get(1)).toArray()));
            ps.executeUpdate();
        }
    }

    // Items put back to pending below their lane's head (retry, replay, schedule again): the head
    // moves back to them. A claimed lane gets them when its run is finished (see FINISH_LANE).
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
        lockLanes(transaction, List.of(work));
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

    private static final String DUE_LANE = """
            SELECT kind, chat_key, head_id, nextval('work_claim_token') FROM work_lane
             WHERE due_at <= now() AND kind = ANY (?::text[]) ORDER BY due_at LIMIT 1 FOR UPDATE SKIP LOCKED""";
    // From the head, in id order: the partial index on unfinished items of a chat serves it. An
    // ordered run is the due prefix, so the first item not due ends it; otherwise only due items count.
    private static final String LANE_ITEMS = """
            SELECT id, source_key, source_id, attempts, next_attempt_at <= now(), next_attempt_at FROM work_item
             WHERE kind = ? AND chat_key = ? AND id >= ? AND state NOT IN ('done', 'parked') %s
             ORDER BY id LIMIT ?""";
    private static final String LANE_NEXT_DUE = """
            SELECT min(next_attempt_at), min(id) FROM work_item WHERE kind = ? AND chat_key = ? AND id >= ? AND state NOT IN ('done', 'parked')""";
    private static final String CLAIM_ITEMS = "UPDATE work_item w SET " + CLAIM_SET.formatted("?") + """
             WHERE w.id = ANY (?::bigint[])
               AND EXISTS (SELECT 1 FROM work_lane l WHERE l.kind = ? AND l.chat_key = ? AND l.claim_token = ?)""";

    /**
     * Claims the run of the lane that has been due longest: up to {@code runSize} consecutive
     * items of one chat from its head. For an ordered kind the run is the due prefix (an item
     * waiting for its retry holds the items after it); otherwise every due item among them. A lane
     * with nothing due is set to when it will be (or idle) and the next lane is tried; null when no
     * lane has a run.
     */
    public WorkRun claimLane(String worker, Duration claim, int runSize, Collection<String> orderedKinds,
                             Collection<String> kinds) throws SQLException {
        for (int lanes = 0; lanes < 16; lanes++) {
            WorkRun lane = inTransaction(c -> claimDueLane(c, worker, claim, orderedKinds, kinds));
            if (lane == null) {
                return null;
            }
            if (lane.token() == 0) {
                continue;
            }
            WorkRun run = claimRun(lane, worker, claim, runSize);
            if (run != null && !run.items().isEmpty()) {
                return run;
            }
            if (run != null) {
                finish(run, List.of(), List.of());
            }
        }
        return null;
    }

    /**
     * Under the lane's lock, only what needs it: is its head due? Then the lane is claimed (and
     * the lock let go at once, so intake never waits behind a run being read); if not, it is set to
     * when it will be due, or idle: intake, which locks the lane too, cannot slip items past that.
     * @return null: no due lane; token 0: this lane had nothing due; else the claimed lane, no items yet
     */
    private static WorkRun claimDueLane(Connection c, String worker, Duration claim, Collection<String> orderedKinds,
                                        Collection<String> kinds) throws SQLException {
        String kind;
        String chatKey;
        long head;
        long token;
        try (PreparedStatement ps = c.prepareStatement(DUE_LANE)) {
            ps.setArray(1, c.createArrayOf("text", kinds.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return null;
                }
                kind = rs.getString(1);
                chatKey = rs.getString(2);
                head = rs.getLong(3);
                token = rs.getLong(4);
            }
        }
        boolean ordered = orderedKinds.contains(kind);
        List<LaneItem> first = laneItems(c, kind, chatKey, head, ordered, 1);
        if (first.isEmpty() || !first.get(0).due()) {
            long newHead = first.isEmpty() ? head : first.get(0).item().id();
            Timestamp due = first.isEmpty() ? null : first.get(0).dueAt();
            if (!ordered) {
                // The first due item need not be the first unfinished one: look at all of them.
                try (PreparedStatement ps = c.prepareStatement(LANE_NEXT_DUE)) {
                    ps.setString(1, kind);
                    ps.setString(2, chatKey);
                    ps.setLong(3, head);
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        due = rs.getTimestamp(1);
                        newHead = rs.getObject(2) == null ? head : rs.getLong(2);
                    }
                }
            }
            try (PreparedStatement ps = c.prepareStatement("UPDATE work_lane SET due_at = ?, head_id = ? WHERE kind = ? AND chat_key = ?")) {
                ps.setTimestamp(1, due);
                ps.setLong(2, newHead);
                ps.setString(3, kind);
                ps.setString(4, chatKey);
                ps.executeUpdate();
            }
            return new WorkRun(0, kind, chatKey, newHead, ordered, List.of());
        }
        long newHead = ordered ? first.get(0).item().id() : head;
        try (PreparedStatement ps = c.prepareStatement("""
                UPDATE work_lane SET due_at = now() + make_interval(secs => ?), head_id = ?, claimed_by = ?, claim_token = ?
                 WHERE kind = ? AND chat_key = ?""")) {
            setSeconds(ps, 1, claim);
            ps.setLong(2, newHead);
            ps.setString(3, worker);
            ps.setLong(4, token);
            ps.setString(5, kind);
            ps.setString(6, chatKey);
            ps.executeUpdate();
        }
        return new WorkRun(token, kind, chatKey, newHead, ordered, List.of());
    }

    private record LaneItem(WorkItem item, boolean due, Timestamp dueAt) {
    }

    /** The first {@code limit} unfinished (for an unordered kind: due) items of a lane from its head, in id order. */
    private static List<LaneItem> laneItems(Connection c, String kind, String chatKey, long head, boolean ordered, int limit) throws SQLException {
        List<LaneItem> items = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(LANE_ITEMS.formatted(ordered ? "" : "AND next_attempt_at <= now()"))) {
            ps.setString(1, kind);
            ps.setString(2, chatKey);
            ps.setLong(3, head);
            ps.setInt(4, limit);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    items.add(new LaneItem(new WorkItem(rs.getLong(1), kind, rs.getString(2), rs.getLong(3), chatKey, rs.getInt(4) + 1, 0),
                            rs.getBoolean(5), rs.getTimestamp(6)));
                }
            }
        }
        return items;
    }

    /**
     * Reads and claims the run of a lane this worker holds, outside the lane's lock. Only while
     * the lane still carries the token, so a worker that lost it meanwhile claims nothing.
     * @return null when the lane was lost
     */
    private WorkRun claimRun(WorkRun lane, String worker, Duration claim, int runSize) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            List<WorkItem> run = new ArrayList<>();
            for (LaneItem item : laneItems(c, lane.kind(), lane.chatKey(), lane.headId(), lane.ordered(), runSize)) {
                if (!item.due()) {
                    break;
                }
                WorkItem i = item.item();
                run.add(new WorkItem(i.id(), i.kind(), i.sourceKey(), i.sourceId(), i.chatKey(), i.attempts(), lane.token()));
            }
            if (run.isEmpty()) {
                return lane;
            }
            try (PreparedStatement ps = c.prepareStatement(CLAIM_ITEMS)) {
                ps.setString(1, worker);
                ps.setLong(2, lane.token());
                setSeconds(ps, 3, claim);
                setSeconds(ps, 4, claim);
                ps.setArray(5, c.createArrayOf("bigint", run.stream().map(WorkItem::id).toArray()));
                ps.setString(6, lane.kind());
                ps.setString(7, lane.chatKey());
                ps.setLong(8, lane.token());
                if (ps.executeUpdate() != run.size()) {
                    return null;
                }
            }
            return new WorkRun(lane.token(), lane.kind(), lane.chatKey(), lane.headId(), lane.ordered(), List.copyOf(run));
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
    }

    private static final String RECORD = """
            UPDATE work_item w SET state = o.state, last_error = o.error, next_attempt_at = COALESCE(o.next_at, w.next_attempt_at),
                   done_at = CASE WHEN o.state = 'done' THEN now() END, outcome = o.result, claimed_by = NULL, claim_token = NULL,
                   claim_expires_at = NULL, updated_at = now()
              FROM unnest(?::bigint[], ?::text[], ?::text[], ?::timestamptz[], ?::text[]) AS o(id, state, error, next_at, result)
             WHERE w.id = o.id AND w.claim_token = ? AND w.state = 'running'""";
    // Claimed but not run (an ordered run stopped at a failure, or the dispatcher is stopping): as before the claim.
    private static final String UNCLAIM = """
            UPDATE work_item SET state = 'pending', attempts = attempts - 1, next_attempt_at = now(), claimed_by = NULL,
                   claim_token = NULL, claim_expires_at = NULL, updated_at = now()
             WHERE id = ANY (?::bigint[]) AND claim_token = ? AND state = 'running'""";
    // The head moves past what the run finished, unless retry or replay moved it back meanwhile.
    private static final String FINISH_LANE = """
            UPDATE work_lane SET due_at = CASE WHEN head_id = ? THEN ? ELSE now() END,
                   head_id = CASE WHEN head_id = ? THEN ? ELSE head_id END, claimed_by = NULL, claim_token = NULL
             WHERE kind = ? AND chat_key = ? AND claim_token = ?""";

    /**
     * Records outcomes of a run that goes on (in one commit).
     * @return false when the claim was lost (its token replaced): nothing was recorded
     */
    public boolean record(WorkRun run, List<Outcome> outcomes) throws SQLException {
        return finish(run, outcomes, null);
    }

    /**
     * Records the run's outcomes, puts its items not run back and releases its lane, in one commit.
     * The lane is due again at once, or, for an ordered run that stopped at a failed item, when
     * that item's retry is due.
     * @return false when the claim was lost (its token replaced): nothing was recorded
     */
    public boolean finish(WorkRun run, List<Outcome> outcomes, List<WorkItem> notRun) throws SQLException {
        // The lane last: its lock, which intake waits for, is held only for the commit.
        return inTransaction(c -> recordOutcomes(c, run, outcomes) && unclaim(c, run, notRun)
                && (notRun == null || !run.laned() || finishLane(c, run, outcomes, notRun)), held -> held);
    }

    private static boolean finishLane(Connection c, WorkRun run, List<Outcome> outcomes, List<WorkItem> notRun) throws SQLException {
        Outcome last = outcomes.isEmpty() ? null : outcomes.get(outcomes.size() - 1);
        long head = run.headId();
        Timestamp due = new Timestamp(System.currentTimeMillis());
        if (run.ordered() && last != null && "failed".equals(last.state())) {
            // The chat waits for this item's retry.
            head = last.item().id();
            due = Timestamp.from(last.nextAttemptAt());
        } else if (run.ordered() && !run.items().isEmpty()) {
            // An ordered run is the chat's consecutive items from its head: the head moves past what finished.
            head = notRun.isEmpty() ? run.items().get(run.items().size() - 1).id() + 1 : notRun.get(0).id();
        }
        try (PreparedStatement ps = c.prepareStatement(FINISH_LANE)) {
            ps.setLong(1, run.headId());
            ps.setTimestamp(2, due);
            ps.setLong(3, run.headId());
            ps.setLong(4, head);
            ps.setString(5, run.kind());
            ps.setString(6, run.chatKey());
            ps.setLong(7, run.token());
            return ps.executeUpdate() == 1;
        }
    }

    private static boolean recordOutcomes(Connection c, WorkRun run, List<Outcome> outcomes) throws SQLException {
        if (outcomes.isEmpty()) {
            return true;
        }
        try (PreparedStatement ps = c.prepareStatement(RECORD)) {
            ps.setArray(1, c.createArrayOf("bigint", outcomes.stream().map(o -> o.item().id()).toArray()));
            ps.setArray(2, c.createArrayOf("text", outcomes.stream().map(Outcome::state).toArray()));
            ps.setArray(3, c.createArrayOf("text", outcomes.stream().map(Outcome::error).toArray()));
            ps.setArray(4, c.createArrayOf("timestamptz", outcomes.stream()
                    .map(o -> o.nextAttemptAt() == null ? null : Timestamp.from(o.nextAttemptAt())).toArray()));
            ps.setArray(5, c.createArrayOf("text", outcomes.stream().map(Outcome::result).toArray()));
            ps.setLong(6, run.token());
            return ps.executeUpdate() == outcomes.size();
        }
    }

    private static boolean unclaim(Connection c, WorkRun run, List<WorkItem> notRun) throws SQLException {
        if (notRun == null || notRun.isEmpty()) {
            return true;
        }
        try (PreparedStatement ps = c.prepareStatement(UNCLAIM)) {
            ps.setArray(1, c.createArrayOf("bigint", notRun.stream().map(WorkItem::id).toArray()));
            ps.setLong(2, run.token());
            return ps.executeUpdate() == notRun.size();
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
        return inTransaction(c -> {
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
        return inTransaction(c -> {
            try (PreparedStatement ps = c.prepareStatement(
                    "UPDATE work_item SET state = 'pending', attempts = 0, next_attempt_at = now(), done_at = NULL, updated_at = now()"
                            + " WHERE kind = ? AND state = 'done' AND created_at >= ? RETURNING kind, chat_key, id")) {
                ps.setString(1, kind);
                ps.setTimestamp(2, Timestamp.from(since));
                return reopen(c, ps);
            }
        });
    }

    private interface Work<T> {
        T run(Connection c) throws SQLException;
    }

    private <T> T inTransaction(Work<T> work) throws SQLException {
        return inTransaction(work, result -> true);
    }

    /** Runs {@code work} in one transaction, committed when {@code commit} says so about its result, else rolled back. */
    private <T> T inTransaction(Work<T> work, Predicate<T> commit) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try {
                T result = work.run(c);
                if (commit.test(result)) {
                    c.commit();
                } else {
                    c.rollback();
                }
                return result;
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            } finally {
                c.setAutoCommit(true);
            }
        }
    }

    private static void setSeconds(PreparedStatement ps, int index, Duration duration) throws SQLException {
        ps.setDouble(index, duration.toMillis() / 1000.0);
    }

    public DataSource dataSource() {
        return dataSource;
    }
}
