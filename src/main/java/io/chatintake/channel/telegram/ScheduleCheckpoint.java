package io.chatintake.channel.telegram;

import static io.chatintake.store.Transactions.inRedoableTransaction;

import io.chatintake.work.WorkQueue;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * How far a bot's stored updates have become work ({@code telegram_schedule_checkpoint}): the
 * offset checkpoint says what Telegram may forget, this one what the work queue has. The poller's
 * transaction only stores and confirms; the updates after this mark are scheduled here, in their
 * row order (which is their order per chat), in transactions of their own.
 * <p>
 * Scheduling is bounded by a row id the caller knows to be committed for the bot: the last row a
 * poller stored, or, for the holder of the poll lease, the inbox's highest row (every earlier
 * holder's batch committed before the lease could change hands, since the batch transaction
 * holds the lease row). Rows of the bot's webhook mode may be anywhere in that range: they were
 * scheduled when they were stored, and scheduling them again schedules nothing. The mark moves
 * only forward and its row lock makes two processes take turns; each turn is safe to repeat, so
 * its commit does not wait for the disk. This class is the only writer of the table.
 */
public final class ScheduleCheckpoint {
    /** Rows per transaction: catching up after a crash takes many short transactions, not one long one. */
    static final int CHUNK = 1000;

    private static final String LOCK = """
            INSERT INTO telegram_schedule_checkpoint (bot_id) VALUES (?)
            ON CONFLICT (bot_id) DO UPDATE SET updated_at = now()
            RETURNING scheduled_through""";

    // By the primary key from the mark up: the range is the bot's recent rows and whatever other
    // bots stored among them. The bot is filtered outside the range (OFFSET 0 keeps it there): a
    // plan cached while the inbox was small otherwise found the rows by bot, all of its history.
    static final String AFTER = """
            SELECT id, update_id, generation, %s, CASE WHEN payload IS NULL THEN raw_payload END
              FROM (SELECT id, bot_id, update_id, generation, payload, raw_payload FROM telegram_update
                     WHERE id > ? AND id <= ? ORDER BY id OFFSET 0) u
             WHERE bot_id = ?
             ORDER BY id LIMIT ?""".formatted(UpdateChat.sqlIdOf("payload"));

    private static final String ADVANCE = """
            UPDATE telegram_schedule_checkpoint SET scheduled_through = GREATEST(scheduled_through, ?), updated_at = now()
             WHERE bot_id = ?""";

    // One statement, one snapshot: if the lease is still this holder's in it, no other poller of
    // the bot has stored anything since, and every row below the inbox's highest is committed.
    private static final String LAST_STORED_ROW = """
            SELECT CASE WHEN EXISTS (SELECT 1 FROM telegram_poll_lease WHERE bot_id = ? AND holder = ? AND fencing_token = ?)
                        THEN (SELECT COALESCE(max(id), 0) FROM telegram_update) ELSE -1 END""";

    private final DataSource dataSource;

    public ScheduleCheckpoint(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /**
     * The inbox's highest row id, a bound for {@link #scheduleThrough} of the lease's bot, or
     * empty when the lease has changed hands (its new holder schedules then).
     */
    public Optional<Long> lastStoredRow(PollLease.Held lease) throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(LAST_STORED_ROW)) {
            ps.setLong(1, lease.botId());
            ps.setString(2, lease.holder());
            ps.setLong(3, lease.fencingToken());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                long last = rs.getLong(1);
                return last < 0 ? Optional.empty() : Optional.of(last);
            }
        }
    }

    /**
     * The bot's stored updates that have no work item yet: above the mark (what a crash or a
     * failing database left for the next lease holder), less those webhook mode scheduled itself.
     */
    public long unscheduled(long botId) throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement("""
                SELECT count(*) FROM telegram_update u
                 WHERE u.bot_id = ? AND u.id > COALESCE((SELECT scheduled_through FROM telegram_schedule_checkpoint WHERE bot_id = ?), 0)
                   AND NOT EXISTS (SELECT 1 FROM work_item w WHERE w.kind = ? AND w.source_id = u.id)""")) {
            ps.setLong(1, botId);
            ps.setLong(2, botId);
            ps.setString(3, TelegramWorkSource.KIND);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    /**
     * Schedules the bot's updates after the mark up to row {@code through} (committed), one
     * transaction per {@link #CHUNK} rows, and returns the mark reached: {@code through} or beyond.
     */
    public long scheduleThrough(long botId, long through) throws SQLException {
        long reached;
        do {
            reached = inRedoableTransaction(dataSource, c -> scheduleChunk(c, botId, through));
        } while (reached < through);
        return reached;
    }

    private static long scheduleChunk(Connection c, long botId, long through) throws SQLException {
        long mark;
        try (PreparedStatement ps = c.prepareStatement(LOCK)) {
            ps.setLong(1, botId);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                mark = rs.getLong(1);
            }
        }
        if (mark >= through) {
            return mark;
        }
        List<WorkQueue.NewWork> work = new ArrayList<>();
        long last = mark;
        try (PreparedStatement ps = c.prepareStatement(AFTER)) {
            ps.setLong(1, mark);
            ps.setLong(2, through);
            ps.setLong(3, botId);
            ps.setInt(4, CHUNK);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    last = rs.getLong(1);
                    String chat = rs.getString(4);
                    String raw = rs.getString(5);
                    if (chat == null && raw != null) {
                        // SQL cannot read an update stored raw; Jackson can, so its chat keeps its order.
                        chat = UpdateChat.idOf(raw).orElse(null);
                    }
                    work.add(TelegramWorkSource.workFor(botId, last, rs.getLong(2), rs.getInt(3), chat));
                }
            }
        }
        WorkQueue.schedule(c, work);
        long reached = work.size() == CHUNK ? last : through;
        try (PreparedStatement ps = c.prepareStatement(ADVANCE)) {
            ps.setLong(1, reached);
            ps.setLong(2, botId);
            ps.executeUpdate();
        }
        return reached;
    }
}
