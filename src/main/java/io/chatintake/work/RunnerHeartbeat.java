package io.chatintake.work;

import io.chatintake.support.ProcessIdentity;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.time.Instant;
import java.util.function.Supplier;
import javax.sql.DataSource;

/**
 * This process's row in {@code runner_heartbeat} (the only writer of that table): beaten every
 * {@code work.heartbeat-seconds} while the dispatcher runs, removed on a clean stop. A row older
 * than a few intervals marks a process as dead: any live one releases its claims
 * ({@link WorkQueue#releaseClaimsOfDeadProcesses}). Each beat also says since when the process
 * holds its handlers back for intake, if it does, for {@code work status} and the status page.
 * Times are the database's, so hosts with skewed clocks agree.
 */
public final class RunnerHeartbeat {
    /** Rows of processes gone this long are deleted; until then a status page can show them as dead. */
    private static final String FORGET_AFTER = "1 day";

    private final DataSource dataSource;
    private final String processId;
    private final Supplier<Instant> heldBackSince;

    /** @param heldBackSince since when handlers are held back for intake (this host's clock), null while they are not */
    public RunnerHeartbeat(DataSource dataSource, String processId, Supplier<Instant> heldBackSince) {
        this.dataSource = dataSource;
        this.processId = processId;
        this.heldBackSince = heldBackSince;
    }

    /**
     * A condition on the row {@code alias} (with {@code claimed_by}) that its claimer is dead: no
     * heartbeat row, or one older than the silence; this process never judges itself. Its
     * parameters are bound by {@link #bindSilence}. Two ranges around this process, not
     * {@code <>}: an index on {@code claimed_by} then skips this process's own claims, live and
     * dead, which a busy process has by the hundred thousand between two vacuums.
     * <p>
     * Silence is counted from the database's start: a process that could not beat while the
     * database restarted is not dead, and beats again within the silence after it is back. (A
     * database that stayed up while every process lost its link is the judging process's to tell:
     * {@link ClaimKeeper} judges only once its own beats have gone through for the silence.)
     */
    static String claimedBySilentProcess(String alias) {
        return """
                (%1$s.claimed_by < ? OR %1$s.claimed_by > ?) AND NOT EXISTS (SELECT 1 FROM runner_heartbeat h
                    WHERE h.process_id = %1$s.claimed_by AND h.beat_at >= now() - make_interval(secs => ?))
                AND pg_postmaster_start_time() < now() - make_interval(secs => ?)""".formatted(alias);
    }

    /** Binds {@link #claimedBySilentProcess}'s parameters from {@code index} on. */
    static void bindSilence(PreparedStatement ps, int index, String self, Duration silence) throws SQLException {
        ps.setString(index, self);
        ps.setString(index + 1, self);
        WorkSql.setSeconds(ps, index + 2, silence);
        WorkSql.setSeconds(ps, index + 3, silence);
    }

    public void beat() throws SQLException {
        Instant since = heldBackSince.get();
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement("""
                INSERT INTO runner_heartbeat (process_id, host, pid, held_back_since) VALUES (?, ?, ?, now() - make_interval(secs => ?))
                ON CONFLICT (process_id) DO UPDATE SET beat_at = now(), held_back_since = EXCLUDED.held_back_since""")) {
            ps.setString(1, processId);
            ps.setString(2, ProcessIdentity.host());
            ps.setLong(3, ProcessHandle.current().pid());
            // Sent as a time held back, not as this host's instant: the row keeps the database's time.
            if (since == null) {
                ps.setNull(4, Types.DOUBLE);
            } else {
                WorkSql.setSeconds(ps, 4, Duration.between(since, Instant.now()));
            }
            ps.executeUpdate();
        }
    }

    /**
     * Forgets processes silent this long (dead, and shown as dead on the status page until then);
     * a live process that comes back after that writes its row anew with its next beat.
     */
    public static void forgetSilentFor(Connection c, Duration silence) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("DELETE FROM runner_heartbeat WHERE beat_at < now() - make_interval(secs => ?)")) {
            ps.setDouble(1, silence.toSeconds());
            ps.executeUpdate();
        }
    }

    /** On a clean stop (no claims left), and the rows of processes long gone. */
    public void remove() throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
                "DELETE FROM runner_heartbeat WHERE process_id = ? OR beat_at < now() - interval '" + FORGET_AFTER + "'")) {
            ps.setString(1, processId);
            ps.executeUpdate();
        }
    }
}
