package io.chatintake.channel.telegram;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;

/**
 * This process's fair share of the poll leases: with B bots and R live processes that would poll
 * them (each says so in {@code telegram_poll_candidate}, and beats in {@code runner_heartbeat}),
 * no process holds more than ceil(B / R) once things settle. One per process, shared by its bots'
 * consumers, so that they count their leases together.
 * <ul>
 * <li>A standing-by consumer takes a free lease only while its process is below its share; any
 *     process takes one that has stayed free for {@link #overflowAfter} (a bot no process within
 *     its share wants, or shares not yet recounted after a death), so a bot is never left unpolled.</li>
 * <li>A process above its share hands one lease over per batch boundary, and only when another
 *     live candidate for that bot is below its share, so a lease is never let go to nobody.</li>
 * </ul>
 * {@link PollLease} and its fencing token still decide who polls: this only decides who asks.
 */
public final class LeaseShare {
    /** Counts are read at most this often: one query a second, whatever the number of bots. */
    private static final long RECOUNT_NANOS = Duration.ofSeconds(1).toNanos();

    private final DataSource dataSource;
    private final String holder;
    private final Duration lease;
    private final Map<Long, Long> candidacyWrittenAt = new ConcurrentHashMap<>();
    private long countedAt;
    private Counts counts;

    /** @param lease the poll lease duration: a candidate or heartbeat older than it is not counted */
    public LeaseShare(DataSource dataSource, String holder, Duration lease) {
        this.dataSource = dataSource;
        this.holder = holder;
        this.lease = lease;
    }

    /** What the last count saw: bots, processes, the share, and the leases this process holds. */
    public record Counts(int bots, int processes, int held) {
        public int share() {
            return processes == 0 ? bots : (bots + processes - 1) / processes;
        }
    }

    /** How long a lease stays free before any process takes it, within its share or not. */
    Duration overflowAfter() {
        return lease.dividedBy(2);
    }

    /** This process would poll the bot: recorded at most four times a lease period. */
    void candidate(long botId) throws SQLException {
        long now = System.nanoTime();
        Long written = candidacyWrittenAt.get(botId);
        if (written != null && now - written < lease.toNanos() / 4) {
            return;
        }
        if (written == null) {
            recount(); // one more bot: a share counted without it would be too small
        }
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement("""
                INSERT INTO telegram_poll_candidate (holder, bot_id) VALUES (?, ?)
                ON CONFLICT (holder, bot_id) DO UPDATE SET seen_at = now()""")) {
            ps.setString(1, holder);
            ps.setLong(2, botId);
            ps.executeUpdate();
        }
        candidacyWrittenAt.put(botId, now);
    }

    /** The bot is no longer polled here (its route stopped): it stops counting at once. */
    void withdraw(long botId) throws SQLException {
        candidacyWrittenAt.remove(botId);
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
                "DELETE FROM telegram_poll_candidate WHERE holder = ? AND bot_id = ?")) {
            ps.setString(1, holder);
            ps.setLong(2, botId);
            ps.executeUpdate();
        }
    }

    /** Whether a standing-by consumer may take a free lease now, rather than after {@link #overflowAfter}. */
    synchronized boolean belowShare() throws SQLException {
        Counts now = counts();
        return now.held() < now.share();
    }

    /**
     * At a batch boundary of a lease this process holds: whether to hand it over now. The caller
     * releases it at once, which counts it as gone ({@link #held}), so that the other consumers of
     * this process do not hand over more than the extra ones.
     */
    synchronized boolean handOver(long botId) throws SQLException {
        Counts now = counts();
        return now.held() > now.share() && anotherCandidateBelowShare(botId, now.share());
    }

    private synchronized void recount() {
        counts = null;
    }

    /** A lease taken or lost changes this process's count before the next recount. */
    synchronized void held(int change) {
        if (counts != null) {
            counts = new Counts(counts.bots(), counts.processes(), Math.max(0, counts.held() + change));
        }
    }

    public synchronized Counts counts() throws SQLException {
        if (counts != null && System.nanoTime() - countedAt < RECOUNT_NANOS) {
            return counts;
        }
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(LIVE + """
                SELECT (SELECT count(DISTINCT bot_id) FROM live_candidate),
                       (SELECT count(DISTINCT holder) FROM live_candidate),
                       (SELECT count(*) FROM telegram_poll_lease WHERE holder = ? AND expires_at > now())""")) {
            bindLive(ps);
            ps.setString(4, holder);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                // This process counts even before its own first candidacy or heartbeat is written.
                counts = new Counts(rs.getInt(1), Math.max(1, rs.getInt(2)), rs.getInt(3));
            }
        }
        countedAt = System.nanoTime();
        return counts;
    }

    private boolean anotherCandidateBelowShare(long botId, int share) throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(LIVE + """
                SELECT count(*) FROM live_candidate k
                 WHERE k.bot_id = ? AND k.holder <> ?
                   AND (SELECT count(*) FROM telegram_poll_lease l WHERE l.holder = k.holder AND l.expires_at > now()) < ?""")) {
            bindLive(ps);
            ps.setLong(4, botId);
            ps.setString(5, holder);
            ps.setInt(6, share);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1) > 0;
            }
        }
    }

    /** Candidates seen within a lease period, of processes that beat within half of one (this one always counts). */
    private static final String LIVE = """
            WITH live_candidate AS (
                SELECT k.holder, k.bot_id FROM telegram_poll_candidate k
                 WHERE k.seen_at > now() - make_interval(secs => ?)
                   AND (k.holder = ? OR EXISTS (SELECT 1 FROM runner_heartbeat h
                                                 WHERE h.process_id = k.holder AND h.beat_at > now() - make_interval(secs => ?))))
            """;

    private void bindLive(PreparedStatement ps) throws SQLException {
        ps.setDouble(1, lease.toMillis() / 1000.0);
        ps.setString(2, holder);
        // Heartbeats come every few seconds: half a lease without one is a dead process, whose
        // leases then go to the survivors as they expire.
        ps.setDouble(3, lease.toMillis() / 2000.0);
    }
}
