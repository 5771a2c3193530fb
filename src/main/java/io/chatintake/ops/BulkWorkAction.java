package io.chatintake.ops;

import static io.chatintake.store.Transactions.inTransaction;

import io.chatintake.work.EffectGuard;
import io.chatintake.work.WorkQueue;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;
import javax.sql.DataSource;

/**
 * Retry or settle every work item a {@link WorkFilter} matches ({@code work retry --kind K ...},
 * the page's filtered actions). {@link #count} comes first, for the person to confirm; {@link #run}
 * then acts in chunks, each chunk's changes and the action's one {@code operator_action} row
 * committed together: the first chunk inserts the row, each later one updates its count, the last
 * marks it done. Between chunks it stops when asked (the caller's flag, or the row's
 * {@code cancel_requested_at}, set from any process), and the row then says cancelled.
 */
final class BulkWorkAction {
    /** Items changed per transaction unless told otherwise: short transactions that still finish thousands in seconds. */
    static final int CHUNK = 500;

    /** What is done to each matching item. */
    enum Kind {
        /** A parked or failed item back to pending, due now ({@code work retry --id}'s change). */
        RETRY("retry-filtered", "back to pending"),
        /** An effect awaiting reconciliation recorded performed, its item back to pending (the guard skips the effect). */
        SETTLE_PERFORMED("settle-filtered", "effect(s) recorded performed, their items back to pending"),
        /** An effect awaiting reconciliation recorded not performed, its item back to pending (the effect runs again). */
        SETTLE_NOT_PERFORMED("settle-filtered", "effect(s) recorded not performed, their items back to pending");

        final String action;
        final String done;

        Kind(String action, String done) {
            this.action = action;
            this.done = done;
        }

        private boolean settles() {
            return this != RETRY;
        }
    }

    /** How far a running action got: items changed so far of those counted at its start. */
    record Progress(long actionId, long changed, long counted, boolean finished, boolean cancelled) {
    }

    /** What the page's and the CLI's form calls each kind: retry, settle-performed, settle-not-performed; null for another word. */
    static Kind named(String word) {
        return switch (word == null ? "" : word) {
            case "retry" -> Kind.RETRY;
            case "settle-performed" -> Kind.SETTLE_PERFORMED;
            case "settle-not-performed" -> Kind.SETTLE_NOT_PERFORMED;
            default -> null;
        };
    }

    interface ProgressListener {
        void chunkDone(Progress progress);
    }

    private final DataSource dataSource;
    private final int chunkSize;

    BulkWorkAction(DataSource dataSource, int chunkSize) {
        this.dataSource = dataSource;
        this.chunkSize = chunkSize;
    }

    /** How many items the action would change now. */
    long count(Kind kind, WorkFilter filter) throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement("SELECT count(*) " + from(kind, filter))) {
            filter.bind(ps, 1);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    /** Acts on every match, chunk by chunk, until none is left or {@code stop} says so; answers the final progress. */
    Progress run(Kind kind, WorkFilter filter, String by, BooleanSupplier stop, ProgressListener listener) throws SQLException {
        long counted = count(kind, filter);
        long actionId = 0;
        long changed = 0;
        long after = 0;
        while (true) {
            if (actionId != 0 && (stop.getAsBoolean() || cancelRequested(actionId))) {
                long id = actionId;
                long total = changed;
                inTransaction(dataSource, c -> finish(c, id, kind, filter, total, counted, "cancelled"));
                Progress cancelled = new Progress(actionId, changed, counted, true, true);
                listener.chunkDone(cancelled);
                return cancelled;
            }
            long from = after;
            long id0 = actionId;
            long sofar = changed;
            Chunk chunk = inTransaction(dataSource, c -> {
                List<Long> ids = next(c, kind, filter, from);
                long n = 0;
                for (long id : ids) {
                    n += apply(c, kind, id, by);
                }
                boolean last = ids.size() < chunkSize;
                long id = id0 == 0 ? insert(c, by, kind, filter) : id0;
                finish(c, id, kind, filter, sofar + n, counted, last ? "done" : "running");
                return new Chunk(id, n, ids.isEmpty() ? from : ids.get(ids.size() - 1), last);
            });
            actionId = chunk.actionId;
            changed += chunk.changed;
            after = chunk.lastId;
            Progress progress = new Progress(actionId, changed, counted, chunk.last, false);
            listener.chunkDone(progress);
            if (chunk.last) {
                return progress;
            }
        }
    }

    /** Asks a running action, in whichever process, to stop after its current chunk; false when it is not running. */
    static boolean requestCancel(DataSource dataSource, long actionId) throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
                "UPDATE operator_action SET cancel_requested_at = now() WHERE id = ? AND state = 'running' AND cancel_requested_at IS NULL")) {
            ps.setLong(1, actionId);
            return ps.executeUpdate() == 1;
        }
    }

    private record Chunk(long actionId, long changed, long lastId, boolean last) {
    }

    private static String from(Kind kind, WorkFilter filter) {
        return kind.settles()
                ? "FROM work_item w WHERE EXISTS (SELECT 1 FROM outbound_effect e WHERE e.work_item_id = w.id AND e.state = 'started') AND "
                        + filter.condition()
                : "FROM work_item w WHERE w.state IN ('parked', 'failed') AND " + filter.condition();
    }

    /** The next chunk's item ids after {@code after}, locked; items another transaction holds are left to a later run. */
    private List<Long> next(Connection c, Kind kind, WorkFilter filter, long after) throws SQLException {
        String sql = "SELECT w.id " + from(kind, filter) + " AND w.id > ? ORDER BY w.id LIMIT ? FOR UPDATE OF w SKIP LOCKED";
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            int i = filter.bind(ps, 1);
            ps.setLong(i++, after);
            ps.setInt(i, chunkSize);
            List<Long> ids = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    ids.add(rs.getLong(1));
                }
            }
            return ids;
        }
    }

    private static long apply(Connection c, Kind kind, long itemId, String by) throws SQLException {
        if (!kind.settles()) {
            return WorkQueue.retry(c, itemId);
        }
        List<String> keys = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT effect_key FROM outbound_effect WHERE work_item_id = ? AND state = 'started'")) {
            ps.setLong(1, itemId);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    keys.add(rs.getString(1));
                }
            }
        }
        long settled = 0;
        for (String key : keys) {
            settled += EffectGuard.resolve(c, key, kind == Kind.SETTLE_PERFORMED, by).isPresent() ? 1 : 0;
        }
        WorkQueue.retry(c, itemId);
        return settled;
    }

    private static long insert(Connection c, String by, Kind kind, WorkFilter filter) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO operator_action (acted_by, action, target, outcome, filter, item_count, state)"
                + " VALUES (?, ?, ?, '', ?, 0, 'running') RETURNING id")) {
            ps.setString(1, by);
            ps.setString(2, kind.action);
            ps.setString(3, "work items matching " + filter);
            ps.setString(4, filter.toString());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    private static Void finish(Connection c, long actionId, Kind kind, WorkFilter filter, long changed, long counted, String state)
            throws SQLException {
        String outcome = switch (state) {
            case "running" -> changed + " of " + counted + " " + kind.done + " so far";
            case "cancelled" -> "cancelled after " + changed + " of " + counted + " " + kind.done;
            default -> changed + " " + kind.done;
        } + " (filter: " + filter + ")";
        try (PreparedStatement ps = c.prepareStatement("UPDATE operator_action SET item_count = ?, state = ?, outcome = ? WHERE id = ?")) {
            ps.setLong(1, changed);
            ps.setString(2, state);
            ps.setString(3, outcome);
            ps.setLong(4, actionId);
            ps.executeUpdate();
        }
        return null;
    }

    private boolean cancelRequested(long actionId) throws SQLException {
        try (Connection c = dataSource.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT cancel_requested_at IS NOT NULL FROM operator_action WHERE id = ?")) {
            ps.setLong(1, actionId);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() && rs.getBoolean(1);
            }
        }
    }
}
