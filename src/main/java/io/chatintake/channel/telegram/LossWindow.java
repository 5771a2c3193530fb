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

    /** Records the window if the last successful poll is older than Telegram's retention. */
    public Optional<Window> recordIfMissed(long botId, Optional<Instant> lastSuccessfulPoll, Instant now) throws SQLException {
        if (lastSuccessfulPoll.isEmpty() || Duration.between(lastSuccessfulPoll.get(), now).compareTo(TELEGRAM_RETENTION) <= 0) {
            return Optional.empty();
        }
        Window window = new Window(lastSuccessfulPoll.get(), now);
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
                "INSERT INTO telegram_loss_window (bot_id, from_time, to_time) VALUES (?, ?, ?)")) {
            ps.setLong(1, botId);
            ps.setTimestamp(2, Timestamp.from(window.from()));
            ps.setTimestamp(3, Timestamp.from(window.to()));
            ps.executeUpdate();
        }
        return Optional.of(window);
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
