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
 * Updates confirmed outside this store. Telegram answers getUpdates from the earliest
 * unconfirmed update, so the first update after the saved checkpoint has exactly the checkpoint's
 * id, unless someone else confirmed the ones before it: a forgotten poller, or a manual
 * getUpdates with a higher offset. Those updates are gone for us; they are recorded and reported
 * as {@code updates X..Y were confirmed outside this store}.
 * <p>
 * Two things explain a higher first id instead, and are no gap: ids restart at a random value
 * after a week without updates, and updates expire unseen after 24 h without a poll (a
 * {@link LossWindow}).
 */
public final class UpdateGap {
    /** Telegram restarts update ids after this long without updates. */
    static final Duration ID_RESTART_IDLE = Duration.ofDays(7);

    public record Gap(long fromUpdateId, long toUpdateId, Instant detectedAt) {
        /** The sentence operators read in the log, {@code telegram status} and the status page. */
        public String describe() {
            return "updates " + fromUpdateId + ".." + toUpdateId + " were confirmed outside this store";
        }
    }

    /**
     * A CTE, {@code gap}, that records the gap before the batch's first update, if there is one
     * nothing explains and {@code guard} holds; its parameters are bound by {@link #bindRecording}.
     * It belongs in the batch's statement, which advances the checkpoint: it reads the offset this
     * batch was asked for, under the poll lease.
     */
    static String recordedIf(String guard) {
        return """
                gap AS (
                    INSERT INTO telegram_gap (bot_id, from_update_id, to_update_id)
                    SELECT bot_id, next_offset, ? - 1 FROM telegram_checkpoint
                     WHERE bot_id = ? AND next_offset > 0 AND ? > next_offset
                       AND last_batch_at > now() - make_interval(secs => %d)
                       AND last_poll_at > now() - make_interval(secs => %d)
                       AND %s
                    RETURNING from_update_id, to_update_id, detected_at)"""
                .formatted(ID_RESTART_IDLE.toSeconds(), LossWindow.TELEGRAM_RETENTION.toSeconds(), guard);
    }

    /** Binds the recording's parameters from {@code index} on; @return the next free index */
    static int bindRecording(PreparedStatement ps, int index, long botId, long firstUpdateId) throws SQLException {
        ps.setLong(index, firstUpdateId);
        ps.setLong(index + 1, botId);
        ps.setLong(index + 2, firstUpdateId);
        return index + 3;
    }

    /** The gap a batch's statement recorded, from its columns {@code from_update_id, to_update_id, detected_at} at {@code column}. */
    static Optional<Gap> read(ResultSet rs, int column) throws SQLException {
        Timestamp detected = rs.getTimestamp(column + 2);
        return detected == null ? Optional.empty() : Optional.of(new Gap(rs.getLong(column), rs.getLong(column + 1), detected.toInstant()));
    }

    private final DataSource dataSource;

    public UpdateGap(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    public List<Gap> list(long botId) throws SQLException {
        List<Gap> gaps = new ArrayList<>();
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT from_update_id, to_update_id, detected_at FROM telegram_gap WHERE bot_id = ? ORDER BY detected_at")) {
            ps.setLong(1, botId);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    gaps.add(new Gap(rs.getLong(1), rs.getLong(2), rs.getTimestamp(3).toInstant()));
                }
            }
        }
        return gaps;
    }
}
