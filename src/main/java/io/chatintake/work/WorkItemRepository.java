package io.chatintake.work;

import static io.chatintake.work.WorkSql.setSeconds;
import static io.chatintake.work.WorkSql.tokens;

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
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The only writer of {@code work_item}: every INSERT, UPDATE and DELETE of it is a statement (or,
 * for statements composed elsewhere, a fragment) of this class, each inside the caller's
 * connection. States and outcomes are enums here ({@link ItemState}, {@link RunResult.Kind}) and
 * stored as the columns always held them. Every claim carries a token (fencing): outcomes,
 * extensions and releases count only while an item still carries it.
 */
final class WorkItemRepository {
    private static final String UNDELIVERABLE = "undeliverable";

    private WorkItemRepository() {
    }

    /** An item a statement touched, for the lanes to move their heads back to it. */
    record Touched(String kind, String chatKey, long id) {
    }

    /**
     * A CTE, {@code items}, that inserts the rows of the relation {@code source} (kind, source_key,
     * source_id, chat_key, o) in the order of {@code o} after the CTE {@code lanes} ran to its end
     * (the uncorrelated sub-select runs once, before the first item takes its id), with
     * {@code traceContext} (a column of it, or NULL) as each item's trace context, returning (id,
     * source_id, source_key) of the items it created. The same source is scheduled once.
     */
    static String itemsFrom(String source, String traceContext) {
        return """
                items AS (
                    INSERT INTO work_item (kind, source_key, source_id, chat_key, trace_context)
                    SELECT kind, source_key, source_id, chat_key, %s FROM %s
                     WHERE (SELECT count(*) FROM lanes) >= 0
                     ORDER BY o
                    ON CONFLICT ON CONSTRAINT work_item_source DO NOTHING
                    RETURNING id, source_id, source_key)""".formatted(traceContext, source);
    }

    /**
     * A DELETE of the items ({@code w}) that {@code condition} picks with the relation {@code source},
     * returning one row each, for retention's statement that removes old sources and their done
     * items together.
     */
    static String deleteWhere(String source, String condition) {
        return "DELETE FROM work_item w USING " + source + " WHERE " + condition + " RETURNING 1";
    }

    /** Schedules one item, or runs an existing one again from the start (done, parked or still retrying). */
    static List<Touched> scheduleAgain(Connection c, String kind, String sourceKey, long sourceId, String chatKey) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("""
                INSERT INTO work_item (kind, source_key, source_id, chat_key) VALUES (?, ?, ?, ?)
                ON CONFLICT ON CONSTRAINT work_item_source DO UPDATE
                   SET state = 'pending', attempts = 0, next_attempt_at = now(), claimed_by = NULL, claim_expires_at = NULL,
                       claim_token = NULL, last_error = NULL, done_at = NULL, updated_at = now()
                RETURNING kind, chat_key, id""")) {
            ps.setString(1, kind);
            ps.setString(2, sourceKey);
            ps.setLong(3, sourceId);
            ps.setString(4, chatKey);
            return touched(ps);
        }
    }

    /** Parked (or failed) items back to pending, due now, attempts reset. {@code id} null: every parked item. */
    static List<Touched> retry(Connection c, Long id) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                "UPDATE work_item SET state = 'pending', attempts = 0, next_attempt_at = now(), last_error = NULL, updated_at = now() WHERE "
                        + (id == null ? "state = 'parked'" : "id = ? AND state IN ('parked', 'failed')") + " RETURNING kind, chat_key, id")) {
            if (id != null) {
                ps.setLong(1, id);
            }
            return touched(ps);
        }
    }

    /**
     * Items not running whose content was erased end as {@code erased}: never claimed, never
     * retried. A running one is left to finish (its handler read its content already).
     */
    static List<Touched> erase(Connection c, Long[] ids) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("""
                UPDATE work_item SET state = 'erased', last_error = NULL, next_attempt_at = now(), claimed_by = NULL,
                       claim_expires_at = NULL, claim_token = NULL, done_at = now(), updated_at = now()
                 WHERE id = ANY (?) AND state IN ('pending', 'failed', 'parked') RETURNING kind, chat_key, id""")) {
            ps.setArray(1, c.createArrayOf("bigint", ids));
            return touched(ps);
        }
    }

    /** Done items of one kind created since a time back to pending: an explicit re-run. */
    static List<Touched> replay(Connection c, String kind, Instant since) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                "UPDATE work_item SET state = 'pending', attempts = 0, next_attempt_at = now(), done_at = NULL, updated_at = now()"
                        + " WHERE kind = ? AND state = 'done' AND created_at >= ? RETURNING kind, chat_key, id")) {
            ps.setString(1, kind);
            ps.setTimestamp(2, Timestamp.from(since));
            return touched(ps);
        }
    }

    private static List<Touched> touched(PreparedStatement update) throws SQLException {
        List<Touched> touched = new ArrayList<>();
        try (ResultSet rs = update.executeQuery()) {
            while (rs.next()) {
                touched.add(new Touched(rs.getString(1), rs.getString(2), rs.getLong(3)));
            }
        }
        return touched;
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

    /** Claims the due item without a chat that waited longest among the given kinds, or returns null. */
    static WorkRun claimUnlaned(Connection c, String worker, Duration claim, Collection<String> kinds) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(CLAIM_UNLANED)) {
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

    /** @return items claimed per token: only those of lanes that still carry the token */
    static Map<Long, Integer> claimItems(Connection c, String worker, Duration claim, List<WorkRun> runs) throws SQLException {
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

    // A deferred item (state pending) gives its attempt back and keeps the last error it had.
    // RECORD and UNCLAIM find a run's items by id alone. The token fences them by itself: a claim's
    // token is new, and every way out of 'running' clears it. With a "state = 'running'" condition
    // the planner reads the partial index work_item_running instead, whose entries left by earlier
    // claims only vacuum removes, many per live item. They are planned at each execution: a plan
    // kept from a small work_item would scan the whole table once it has grown.
    private static final String RECORD = """
            UPDATE work_item w SET state = o.state, next_attempt_at = COALESCE(now() + make_interval(secs => o.next_in), w.next_attempt_at),
                   attempts = CASE WHEN o.state = 'pending' THEN w.attempts - 1 ELSE w.attempts END,
                   last_error = CASE WHEN o.state = 'pending' THEN w.last_error ELSE o.error END,
                   done_at = CASE WHEN o.state = 'done' THEN now() END, outcome = o.result, claimed_by = NULL, claim_token = NULL,
                   claim_expires_at = NULL, updated_at = now()
              FROM unnest(?::bigint[], ?::text[], ?::text[], ?::float8[], ?::text[], ?::bigint[])
                   AS o(id, state, error, next_in, result, token)
             WHERE w.id = o.id AND w.claim_token = o.token
            RETURNING o.token, w.id, w.attempts, o.state, o.result, o.error, (SELECT b FROM work_item b WHERE b.id = w.id) AS claimed""";

    // Each run also leaves a work_run row, in the same statement (a deferral is no run: its attempt
    // is given back). claimed is the item as the statement's snapshot has it, i.e. as claimed: who
    // ran it and since when.
    private static final String RECORD_WITH_RUNS = """
            WITH recorded AS (%s),
                 run AS (
            INSERT INTO work_run (work_item_id, attempt, state, outcome, error, process, claimed_at)
            SELECT id, attempts, state, result, error, (claimed).claimed_by, (claimed).updated_at FROM recorded WHERE state <> 'pending')
            SELECT token FROM recorded""".formatted(RECORD);

    private static final String RECORDED_BY = """
            SELECT r.work_item_id FROM work_run r
              JOIN unnest(?::bigint[], ?::int[]) AS o(id, attempt) ON r.work_item_id = o.id AND r.attempt = o.attempt
             WHERE r.process = ?""";

    static Set<Long> recordedBy(Connection c, String worker, List<RunResult> results) throws SQLException {
        Set<Long> recorded = new HashSet<>();
        try (PreparedStatement ps = c.prepareStatement(RECORDED_BY)) {
            ps.setArray(1, c.createArrayOf("bigint", results.stream().map(o -> o.item().id()).toArray()));
            ps.setArray(2, c.createArrayOf("integer", results.stream().map(o -> o.item().attempts()).toArray()));
            ps.setString(3, worker);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    recorded.add(rs.getLong(1));
                }
            }
        }
        return recorded;
    }

    /** @return outcomes recorded per token: only those of items that still carry their run's token */
    static Map<Long, Integer> recordOutcomes(Connection c, List<FinishedRun> finished) throws SQLException {
        List<RunResult> outcomes = new ArrayList<>();
        List<Long> tokens = new ArrayList<>();
        for (FinishedRun f : finished) {
            outcomes.addAll(f.outcomes());
            f.outcomes().forEach(o -> tokens.add(f.run().token()));
        }
        if (outcomes.isEmpty()) {
            return Map.of();
        }
        try (PreparedStatement ps = PlannedEachTime.prepare(c, RECORD_WITH_RUNS)) {
            ps.setArray(1, c.createArrayOf("bigint", outcomes.stream().map(o -> o.item().id()).toArray()));
            ps.setArray(2, c.createArrayOf("text", outcomes.stream().map(o -> o.state().stored()).toArray()));
            ps.setArray(3, c.createArrayOf("text", outcomes.stream().map(RunResult::error).toArray()));
            ps.setArray(4, c.createArrayOf("float8", outcomes.stream()
                    .map(o -> o.nextAttemptAt() == null ? null : WorkSql.secondsUntil(o.nextAttemptAt())).toArray()));
            ps.setArray(5, c.createArrayOf("text", outcomes.stream()
                    .map(o -> o.kind() == RunResult.Kind.UNDELIVERABLE ? UNDELIVERABLE : null).toArray()));
            ps.setArray(6, c.createArrayOf("bigint", tokens.toArray()));
            return tokens(ps);
        }
    }

    // Claimed but not run (an ordered run stopped at a failure, or the dispatcher is stopping): as before the claim.
    private static final String UNCLAIM = """
            UPDATE work_item w SET state = 'pending', attempts = w.attempts - 1, next_attempt_at = now(), claimed_by = NULL,
                   claim_token = NULL, claim_expires_at = NULL, updated_at = now()
              FROM unnest(?::bigint[], ?::bigint[]) AS u(id, token)
             WHERE w.id = u.id AND w.claim_token = u.token
            RETURNING u.token""";

    /** @return items given back per token, of runs that end: only those that still carry their run's token */
    static Map<Long, Integer> unclaim(Connection c, List<FinishedRun> finished) throws SQLException {
        List<Long> ids = new ArrayList<>();
        List<Long> tokens = new ArrayList<>();
        for (FinishedRun f : finished) {
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

    // SKIP LOCKED as in WorkLanes.extend: an item another statement holds (its outcome being
    // recorded) is left as it is and its run still counts as held. Waiting for it instead deadlocked
    // with the recording, which locks a run's items in another order.
    private static final String EXTEND = """
            WITH running AS (
                SELECT id, claim_token FROM work_item WHERE state = 'running' AND claimed_by = ? AND claim_token = ANY (?::bigint[])),
                 extended AS (
                UPDATE work_item w SET claim_expires_at = now() + make_interval(secs => ?), next_attempt_at = now() + make_interval(secs => ?)
                  FROM (SELECT id FROM work_item WHERE id IN (SELECT id FROM running) FOR UPDATE SKIP LOCKED) free
                 WHERE w.id = free.id AND w.state = 'running' AND w.claimed_by = ?)
            SELECT DISTINCT claim_token FROM running""";

    /**
     * @return the tokens among {@code tokens} whose items are still running under this worker's
     *         claim, now extended but for those whose outcome is being recorded meanwhile
     */
    static List<Long> extend(Connection c, String worker, Collection<Long> tokens, Duration claim) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(EXTEND)) {
            ps.setString(1, worker);
            ps.setArray(2, c.createArrayOf("bigint", tokens.toArray()));
            setSeconds(ps, 3, claim);
            setSeconds(ps, 4, claim);
            ps.setString(5, worker);
            TreeSet<Long> held = new TreeSet<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    held.add(rs.getLong(1));
                }
            }
            return List.copyOf(held);
        }
    }

    /**
     * The running items of processes silent for {@code silence} back to pending, due at once (they
     * keep the attempt they were claimed for), their tokens cleared.
     * @return the items released
     */
    static int releaseClaimsOfSilentProcesses(Connection c, String self, Duration silence) throws SQLException {
        // Planned with this process's name: a kept generic plan reads every running claim's index entry.
        try (PreparedStatement ps = PlannedEachTime.prepare(c, """
                UPDATE work_item w SET state = 'pending', next_attempt_at = now(), claimed_by = NULL, claim_token = NULL,
                       claim_expires_at = NULL, last_error = 'claim released: ' || w.claimed_by || ' stopped beating', updated_at = now()
                 WHERE w.state = 'running' AND""" + " " + RunnerHeartbeat.claimedBySilentProcess("w"))) {
            RunnerHeartbeat.bindSilence(ps, 1, self, silence);
            return ps.executeUpdate();
        }
    }
}
