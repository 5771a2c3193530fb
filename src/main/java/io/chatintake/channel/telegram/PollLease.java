package io.chatintake.channel.telegram;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * One active poller per bot across every process sharing the database. Telegram's 409 is only a hint: two pollers can both receive the same
 * unconfirmed batch without one, so ownership comes from this lease.
 * <p>
 * Taking the lease from another holder (only once it expired) increments the fencing token;
 * {@link TelegramUpdateStore} checks the token in the transaction that advances the checkpoint, so a
 * poller that paused past its lease cannot confirm anything. Expiry uses the database clock, so
 * processes on machines with different clocks agree.
 */
public final class PollLease {
    private final DataSource dataSource;

    public PollLease(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /** A lease held: who, and the fencing token that proves it. */
    public record Held(long botId, String holder, long fencingToken) {
    }

    public record Holder(String holder, long fencingToken, boolean expired) {
    }

    private static final String ACQUIRE = """
            INSERT INTO telegram_poll_lease (bot_id, holder, fencing_token, acquired_at, expires_at)
            VALUES (?, ?, 1, now(), now() + make_interval(secs => ?))
            ON CONFLICT (bot_id) DO UPDATE
               SET holder = EXCLUDED.holder,
                   fencing_token = telegram_poll_lease.fencing_token + 1,
                   acquired_at = now(),
                   expires_at = EXCLUDED.expires_at
             WHERE telegram_poll_lease.expires_at < now() - make_interval(secs => ?)
            RETURNING fencing_token""";

    /** Takes the lease if nobody holds it or the holder's lease expired. */
    public Optional<Held> tryAcquire(long botId, String holder, Duration duration) throws SQLException {
        return tryAcquire(botId, holder, duration, Duration.ZERO);
    }

    /** Takes the lease if nobody ever held it or it expired at least {@code freeFor} ago ({@link LeaseShare}). */
    public Optional<Held> tryAcquire(long botId, String holder, Duration duration, Duration freeFor) throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(ACQUIRE)) {
            ps.setLong(1, botId);
            ps.setString(2, holder);
            ps.setDouble(3, duration.toMillis() / 1000.0);
            ps.setDouble(4, freeFor.toMillis() / 1000.0);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(new Held(botId, holder, rs.getLong(1))) : Optional.empty();
            }
        }
    }

    private static final String RENEW = """
            UPDATE telegram_poll_lease SET expires_at = now() + make_interval(secs => ?)
             WHERE bot_id = ? AND holder = ? AND fencing_token = ?""";

    /**
     * A CTE, {@code renewed}, that renews the lease within the caller's statement and returns one
     * row while it is still held; its parameters are bound by {@link #bindRenewal}. The row lock it
     * takes serialises the holder's commit with a takeover.
     */
    static final String RENEWED = "renewed AS (" + RENEW + " RETURNING 1)";

    /** @return false when the lease was taken over: stop polling at once */
    public boolean renew(Held lease, Duration duration) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            return renew(c, lease, duration);
        }
    }

    private static boolean renew(Connection c, Held lease, Duration duration) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(RENEW)) {
            bindRenewal(ps, 1, lease, duration);
            return ps.executeUpdate() == 1;
        }
    }

    /** Binds the renewal's parameters from {@code index} on; @return the next free index */
    static int bindRenewal(PreparedStatement ps, int index, Held lease, Duration duration) throws SQLException {
        ps.setDouble(index, duration.toMillis() / 1000.0);
        ps.setLong(index + 1, lease.botId());
        ps.setString(index + 2, lease.holder());
        ps.setLong(index + 3, lease.fencingToken());
        return index + 4;
    }

    /** Lets another process take over at once, instead of after the lease runs out. */
    public void release(Held lease) throws SQLException {
        release(lease, Duration.ZERO);
    }

    /** Lets another process take over after {@code after} (a poll given up on may still be open at Telegram until then). */
    public void release(Held lease, Duration after) throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
                "UPDATE telegram_poll_lease SET expires_at = now() + make_interval(secs => ?) - interval '1 millisecond'"
                        + " WHERE bot_id = ? AND holder = ? AND fencing_token = ?")) {
            ps.setDouble(1, after.toMillis() / 1000.0);
            ps.setLong(2, lease.botId());
            ps.setString(3, lease.holder());
            ps.setLong(4, lease.fencingToken());
            ps.executeUpdate();
        }
    }

    public Optional<Holder> current(long botId) throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT holder, fencing_token, expires_at < now() FROM telegram_poll_lease WHERE bot_id = ?")) {
            ps.setLong(1, botId);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(new Holder(rs.getString(1), rs.getLong(2), rs.getBoolean(3))) : Optional.empty();
            }
        }
    }
}
