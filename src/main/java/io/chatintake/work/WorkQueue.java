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
import javax.sql.DataSource;

/**
 * The stored work and its states, in plain SQL: pending -> running (claimed until the claim
 * expires) -> done, or failed (retried at next_attempt_at) -> parked after the last attempt.
 * Claims use {@code FOR UPDATE SKIP LOCKED}, so any number of processes share the work; an item
 * whose chat has an earlier unfinished item is not claimable, which keeps per-chat order.
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
     * This class is the only writer of {@code work_item}.
     */
    public static List<Scheduled> schedule(Connection transaction, List<NewWork> work) throws SQLException {
        if (work.isEmpty()) {
            return List.of();
        }
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

    /** Schedules one item, or runs an existing one again from the start (done, parked or still retrying). */
    public static void scheduleAgain(Connection transaction, NewWork work) throws SQLException {
        try (PreparedStatement ps = transaction.prepareStatement("""
                INSERT INTO work_item (kind, source_key, source_id, chat_key) VALUES (?, ?, ?, ?)
                ON CONFLICT ON CONSTRAINT work_item_source DO UPDATE
                   SET state = 'pending', attempts = 0, next_attempt_at = now(), claimed_by = NULL, claim_expires_at = NULL,
                       last_error = NULL, done_at = NULL, updated_at = now()""")) {
            ps.setString(1, work.kind());
            ps.setString(2, work.sourceKey());
            ps.setLong(3, work.sourceId());
            ps.setString(4, work.chatKey());
            ps.executeUpdate();
        }
    }

    // Due: pending or failed and its time has come, or running with an expired claim (its worker died).
    private static final String CLAIM = """
            WITH due AS (
                SELECT w.id FROM work_item w
                 WHERE ((w.state IN ('pending', 'failed') AND w.next_attempt_at <= now())
                        OR (w.state = 'running' AND w.claim_expires_at < now()))
                   AND (%s)
                   AND w.kind = ANY (?::text[])
                   AND (w.chat_key IS NULL OR NOT (w.kind = ANY (?::text[])) OR NOT EXISTS (
                          SELECT 1 FROM work_item e
                           WHERE e.kind = w.kind AND e.chat_key = w.chat_key AND e.id < w.id
                             AND e.state NOT IN ('done', 'parked')))
                 ORDER BY w.next_attempt_at, w.id
                 LIMIT ?
                 FOR UPDATE SKIP LOCKED)
            UPDATE work_item w
               SET state = 'running', attempts = w.attempts + 1, claimed_by = ?,
                   claim_expires_at = now() + make_interval(secs => ?), updated_at = now()
              FROM due WHERE w.id = due.id
            RETURNING w.id, w.kind, w.source_key, w.source_id, w.chat_key, w.attempts""";

    /**
     * Claims up to {@code limit} due items of the given kinds: the kinds this process has a handler
     * for. Items of other kinds are left for a process that handles them, never claimed here.
     */
    public List<WorkItem> claim(int limit, String worker, Duration claim, Collection<String> orderedKinds,
                                Collection<String> kinds) throws SQLException {
        return claim(String.format(CLAIM, "true"), null, limit, worker, claim, orderedKinds, kinds);
    }

    /** Claims these items if they are due and of the given kinds: the fast path right after intake stored them. */
    public List<WorkItem> claimIds(List<Long> ids, String worker, Duration claim, Collection<String> orderedKinds,
                                   Collection<String> kinds) throws SQLException {
        if (ids.isEmpty()) {
            return List.of();
        }
        return claim(String.format(CLAIM, "w.id = ANY (?::bigint[])"), ids, ids.size(), worker, claim, orderedKinds, kinds);
    }

    private List<WorkItem> claim(String sql, List<Long> ids, int limit, String worker, Duration claim,
                                 Collection<String> orderedKinds, Collection<String> kinds) throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            int i = 1;
            if (ids != null) {
                ps.setArray(i++, c.createArrayOf("bigint", ids.toArray()));
            }
            ps.setArray(i++, c.createArrayOf("text", kinds.toArray()));
            ps.setArray(i++, c.createArrayOf("text", orderedKinds.toArray()));
            ps.setInt(i++, limit);
            ps.setString(i++, worker);
            ps.setDouble(i, claim.toMillis() / 1000.0);
            List<WorkItem> items = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    items.add(new WorkItem(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getLong(4), rs.getString(5), rs.getInt(6)));
                }
            }
            items.sort((a, b) -> Long.compare(a.id(), b.id()));
            return items;
        }
    }

    /** @return false when the claim was lost (expired and taken by another worker): the outcome is not ours to record */
    public boolean done(WorkItem item, String worker) throws SQLException {
        return update("UPDATE work_item SET state = 'done', done_at = now(), claimed_by = NULL, claim_expires_at = NULL,"
                + " last_error = NULL, updated_at = now() WHERE id = ? AND claimed_by = ? AND state = 'running'", item, worker);
    }

    public boolean failed(WorkItem item, String worker, String error, Instant nextAttemptAt) throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
                "UPDATE work_item SET state = 'failed', last_error = ?, next_attempt_at = ?, claimed_by = NULL,"
                        + " claim_expires_at = NULL, updated_at = now() WHERE id = ? AND claimed_by = ? AND state = 'running'")) {
            ps.setString(1, error);
            ps.setTimestamp(2, Timestamp.from(nextAttemptAt));
            ps.setLong(3, item.id());
            ps.setString(4, worker);
            return ps.executeUpdate() == 1;
        }
    }

    /** Done for good without its effect (refused permanently, e.g. the bot was blocked): never retried. */
    public boolean undeliverable(WorkItem item, String worker, String reason) throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
                "UPDATE work_item SET state = 'done', outcome = 'undeliverable', done_at = now(), last_error = ?, claimed_by = NULL,"
                        + " claim_expires_at = NULL, updated_at = now() WHERE id = ? AND claimed_by = ? AND state = 'running'")) {
            ps.setString(1, reason);
            ps.setLong(2, item.id());
            ps.setString(3, worker);
            return ps.executeUpdate() == 1;
        }
    }

    public boolean parked(WorkItem item, String worker, String error) throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
                "UPDATE work_item SET state = 'parked', last_error = ?, claimed_by = NULL, claim_expires_at = NULL,"
                        + " updated_at = now() WHERE id = ? AND claimed_by = ? AND state = 'running'")) {
            ps.setString(1, error);
            ps.setLong(2, item.id());
            ps.setString(3, worker);
            return ps.executeUpdate() == 1;
        }
    }

    /** Parked (or failed) items back to pending, due now, attempts reset. {@code id} null: every parked item. */
    public int retry(Long id) throws SQLException {
        String sql = "UPDATE work_item SET state = 'pending', attempts = 0, next_attempt_at = now(), last_error = NULL,"
                + " updated_at = now() WHERE " + (id == null ? "state = 'parked'" : "id = ? AND state IN ('parked', 'failed')");
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            if (id != null) {
                ps.setLong(1, id);
            }
            return ps.executeUpdate();
        }
    }

    /** An explicit re-run of done items of one kind created since a time; never implicit. */
    public int replay(String kind, Instant since) throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
                "UPDATE work_item SET state = 'pending', attempts = 0, next_attempt_at = now(), done_at = NULL, updated_at = now()"
                        + " WHERE kind = ? AND state = 'done' AND created_at >= ?")) {
            ps.setString(1, kind);
            ps.setTimestamp(2, Timestamp.from(since));
            return ps.executeUpdate();
        }
    }

    private boolean update(String sql, WorkItem item, String worker) throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setLong(1, item.id());
            ps.setString(2, worker);
            return ps.executeUpdate() == 1;
        }
    }

    public DataSource dataSource() {
        return dataSource;
    }

}
