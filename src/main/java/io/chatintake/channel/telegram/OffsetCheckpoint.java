package io.chatintake.channel.telegram;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * The bot's saved next offset. It is read here and only ever advanced by {@link TelegramUpdateStore}, in the transaction that stored the batch.
 */
public final class OffsetCheckpoint {
    private final DataSource dataSource;

    public OffsetCheckpoint(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    public record Saved(long botId, String botName, long nextOffset, Instant lastPollAt, long storedCount, long duplicateCount) {
        public Optional<Instant> lastSuccessfulPoll() {
            return Optional.ofNullable(lastPollAt);
        }
    }

    /** The saved checkpoint, created at offset 0 ("from the earliest unconfirmed update") for a new bot. */
    public Saved load(long botId, String botName) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            try (PreparedStatement ps = c.prepareStatement(
                    "INSERT INTO telegram_checkpoint (bot_id, bot_name) VALUES (?, ?) ON CONFLICT (bot_id) DO UPDATE SET bot_name = EXCLUDED.bot_name")) {
                ps.setLong(1, botId);
                ps.setString(2, botName);
                ps.executeUpdate();
            }
            return find(c, botId).orElseThrow();
        }
    }

    public Optional<Saved> find(long botId) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            return find(c, botId);
        }
    }

    private static Optional<Saved> find(Connection c, long botId) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT bot_id, bot_name, next_offset, last_poll_at, stored_count, duplicate_count"
                + " FROM telegram_checkpoint WHERE bot_id = ?")) {
            ps.setLong(1, botId);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return Optional.empty();
                }
                Timestamp lastPoll = rs.getTimestamp(4);
                return Optional.of(new Saved(rs.getLong(1), rs.getString(2), rs.getLong(3),
                        lastPoll == null ? null : lastPoll.toInstant(), rs.getLong(5), rs.getLong(6)));
            }
        }
    }

    /** An empty batch confirms nothing new: only the time of the last successful poll moves. */
    public void recordEmptyPoll(long botId) throws SQLException {
        try (Connection c = dataSource.getConnection();
             PreparedStatement ps = c.prepareStatement("UPDATE telegram_checkpoint SET last_poll_at = now() WHERE bot_id = ?")) {
            ps.setLong(1, botId);
            ps.executeUpdate();
        }
    }
}
