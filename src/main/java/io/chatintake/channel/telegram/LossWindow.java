package io.chatintake.channel.telegram;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * Telegram keeps an unconfirmed update for 24 hours at most. When a bot was not polled for longer
 * than that, updates may have been dropped by the server: nothing can bring them back, but the
 * period is recorded so an operator can investigate it.
 */
public final class LossWindow {
    public static final Duration TELEGRAM_RETENTION = Duration.ofHours(24);
    private final DataSource dataSource;

    public LossWindow(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    public record Window(Instant from, Instant to) {
    }

    /**
     * Records the window if the last successful poll is older than Telegram's retention. A window is
     * keyed by its start: while polls keep failing, each call extends the same window to {@code now}.
     *
     * @return the window if this call recorded it first (to be reported once), else empty
     */
    public Optional<Window> recordIfMissed(long botId, Optional<Instant> lastSuccessfulPoll, Instant now) throws SQLException {
        if (lastSuccessfulPoll.isEmpty() || !missed(lastSuccessfulPoll.get(), now)) {
            return Optional.empty();
        }
        Window window = new Window(lastSuccessfulPoll.get(), now);
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement("""
                INSERT INTO telegram_loss_window (bot_id, from_time, to_time) VALUES (?, ?, ?)
                ON CONFLICT (bot_id, from_time) DO UPDATE SET to_time = greatest(telegram_loss_window.to_time, EXCLUDED.to_time)
                RETURNING (xmax = 0) AS recorded""")) {
            ps.setLong(1, botId);
            ps.setTimestamp(2, Timestamp.from(window.from()));
            ps.setTimestamp(3, Timestamp.from(window.to()));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1) ? Optional.of(window) : Optional.empty();
            }
        }
    }

    /** Whether updates received by Telegram since the last successful poll may have expired unseen. */
    public static boolean missed(Instant lastSuccessfulPoll, Instant now) {
        return Duration.between(lastSuccessfulPoll, now).compareTo(TELEGRAM_RETENTION) > 0;
    }

    public List<Window> list(long botId) throws SQLException {
        List<Window> windows = new ArrayList<>();
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT from_time, to_time FROM telegram_loss_window WHERE bot_id = ? ORDER BY from_time")) {
            ps.setLong(1, botId);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    windows.add(new Window(rs.getTimestamp(1).toInstant(), rs.getTimestamp(2).toInstant()));
                }
            }
        }
        return windows;
    }
}
