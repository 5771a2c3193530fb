package io.chatintake.channel.telegram;

import static io.chatintake.store.Transactions.inRedoableTransaction;

import io.chatintake.channel.ChildMessages;
import io.chatintake.message.ChildMessageListener;
import io.chatintake.support.CrashPoint;
import io.chatintake.work.WorkQueue;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import javax.sql.DataSource;

/**
 * How far a bot's stored updates have become work ({@code telegram_schedule_checkpoint}): the
 * offset checkpoint says what Telegram may forget, this one what the work queue has. The poller's
 * transaction only stores and confirms; the updates after this mark are scheduled here, in their
 * row order (which is their order per chat), in transactions of their own, and what is derived
 * from them goes with their work: the album children of media-group parts, with their attachment
 * rows and album scheduling ({@link MediaGroupChildren}). The mark moves in the same transaction,
 * so rows a crash left underived are above it, and whoever schedules next derives them.
 * <p>
 * Scheduling is bounded by a row id the caller knows to be committed for the bot: the last row a
 * poller stored, or, for the holder of the poll lease, the inbox's highest row (every earlier
 * holder's batch committed before the lease could change hands, since the batch transaction
 * holds the lease row). Rows of the bot's webhook mode may be anywhere in that range: they were
 * scheduled when they were stored, and scheduling them again schedules nothing. The mark moves
 * only forward and its row lock makes two processes take turns; each turn is safe to repeat, so
 * its commit does not wait for the disk. This class is the only writer of the table.
 * <p>
 * Rows the caller's poller has just stored are scheduled from what storing returned
 * ({@link Stored}), not read back: read back by the primary key, one bot's range holds every
 * other bot's rows stored meanwhile, so with many bots each row would be read once per bot.
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
            SELECT id, update_id, generation, %s, CASE WHEN payload IS NULL THEN raw_payload END,
                   jsonb_exists(COALESCE(payload -> 'message', payload -> 'channel_post', payload -> 'business_message'), 'media_group_id')
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
    private final ChildMessageListener childListener;

    /**
     * What one poller stored for its bot under its current lease and has not seen scheduled yet, in
     * row order: every row of the bot above {@code above} that polling stored is among them (rows of
     * webhook mode are not: they were scheduled and derived when stored).
     *
     * @param mediaGroupParts the rows among {@code work} that may be media-group parts
     */
    public record Stored(long above, List<WorkQueue.NewWork> work, Set<Long> mediaGroupParts) {
        /** Nothing known: every row is read from storage. */
        public static final Stored NONE = new Stored(Long.MAX_VALUE, List.of());

        /** Without knowing which rows are media-group parts: each is looked at. */
        public Stored(long above, List<WorkQueue.NewWork> work) {
            this(above, work, work.stream().map(WorkQueue.NewWork::sourceId).collect(Collectors.toSet()));
        }

        /** At most {@code limit} of the rows in ({@code after}, {@code through}], in row order. */
        Chunk between(long after, long through, int limit) {
            List<WorkQueue.NewWork> found = new ArrayList<>();
            for (WorkQueue.NewWork row : work) {
                if (row.sourceId() > through || found.size() == limit) {
                    break;
                }
                if (row.sourceId() > after) {
                    found.add(row);
                }
            }
            return new Chunk(found, found.stream().map(WorkQueue.NewWork::sourceId).filter(mediaGroupParts::contains)
                    .collect(Collectors.toSet()));
        }
    }

    /** One transaction's rows in row order, and those among them that may be media-group parts. */
    private record Chunk(List<WorkQueue.NewWork> work, Set<Long> parts) {
    }

    /** @param childListener told about the album children derived from the scheduled rows, in their transaction */
    public ScheduleCheckpoint(DataSource dataSource, ChildMessageListener childListener) {
        this.dataSource = dataSource;
        this.childListener = childListener;
    }

    /** With the listeners every runner has, at the default quiet periods (commands, benchmarks). */
    public ScheduleCheckpoint(DataSource dataSource) {
        this(dataSource, ChildMessages.listener());
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
     * Schedules the bot's updates after the mark up to row {@code through} (committed) and derives
     * their children, one transaction per {@link #CHUNK} rows, and returns the mark reached:
     * {@code through} or beyond.
     */
    public long scheduleThrough(long botId, long through) throws SQLException {
        return scheduleThrough(botId, through, Stored.NONE);
    }

    /** The same, taking the rows above {@code stored.above()} from {@code stored} instead of storage. */
    public long scheduleThrough(long botId, long through, Stored stored) throws SQLException {
        long reached;
        do {
            reached = inRedoableTransaction(dataSource, c -> scheduleChunk(c, botId, through, stored));
        } while (reached < through);
        return reached;
    }

    private long scheduleChunk(Connection c, long botId, long through, Stored stored) throws SQLException {
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
        CrashPoint.reach(CrashPoint.TELEGRAM_BEFORE_DERIVATION);
        boolean known = mark >= stored.above();
        // Rows below what the poller stored (an earlier holder's, a crash's leftovers) come from storage first.
        long bound = known ? through : Math.min(through, stored.above());
        Chunk chunk = known ? stored.between(mark, bound, CHUNK) : read(c, botId, mark, bound);
        List<WorkQueue.NewWork> work = chunk.work();
        WorkQueue.schedule(c, work);
        UpdateText.copy(c, work.stream().map(WorkQueue.NewWork::sourceId).toList());
        Map<Long, String> traces = new HashMap<>();
        work.forEach(w -> traces.put(w.sourceId(), w.traceContext()));
        MediaGroupChildren.derive(c, childListener, chunk.parts(), traces);
        long reached = work.size() == CHUNK ? work.get(CHUNK - 1).sourceId() : bound;
        try (PreparedStatement ps = c.prepareStatement(ADVANCE)) {
            ps.setLong(1, reached);
            ps.setLong(2, botId);
            ps.executeUpdate();
        }
        return reached;
    }

    /** The bot's rows in ({@code after}, {@code through}] from storage, at most {@link #CHUNK}. */
    private static Chunk read(Connection c, long botId, long after, long through) throws SQLException {
        List<WorkQueue.NewWork> work = new ArrayList<>();
        Set<Long> parts = new HashSet<>();
        try (PreparedStatement ps = c.prepareStatement(AFTER)) {
            ps.setLong(1, after);
            ps.setLong(2, through);
            ps.setLong(3, botId);
            ps.setInt(4, CHUNK);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String chat = rs.getString(4);
                    String raw = rs.getString(5);
                    if (chat == null && raw != null) {
                        // SQL cannot read an update stored raw; Jackson can, so its chat keeps its order.
                        chat = UpdateChat.idOf(raw).orElse(null);
                    }
                    work.add(TelegramWorkSource.workFor(botId, rs.getLong(1), rs.getLong(2), rs.getInt(3), chat, null));
                    if (rs.getBoolean(6)) {
                        parts.add(rs.getLong(1));
                    }
                }
            }
        }
        return new Chunk(work, parts);
    }
}
