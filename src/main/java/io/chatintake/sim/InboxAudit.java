package io.chatintake.sim;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * The offset invariant of the Bot API, checked by the simulator at every getUpdates(offset = X): every update
 * that X confirms is already stored in {@code telegram_update} (same bot, id and payload; for an update
 * jsonb refused, the same raw text).
 */
public final class InboxAudit implements BotApiSimulator.ConfirmationAudit {
    private static final String MISSING = """
            SELECT i.update_id
              FROM unnest(?::bigint[], ?::text[]) AS i(update_id, payload)
             WHERE NOT EXISTS (SELECT 1 FROM telegram_update t
                                WHERE t.bot_id = ? AND t.update_id = i.update_id
                                  AND CASE WHEN t.payload IS NULL THEN t.raw_payload = i.payload
                                           ELSE t.payload = i.payload::jsonb END)""";

    private final DataSource dataSource;

    public InboxAudit(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    @Override
    public List<Long> missing(long botId, List<BotApiSimulator.QueuedUpdate> confirmed) {
        Long[] ids = confirmed.stream().map(BotApiSimulator.QueuedUpdate::updateId).toArray(Long[]::new);
        String[] payloads = confirmed.stream().map(BotApiSimulator.QueuedUpdate::json).toArray(String[]::new);
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(MISSING)) {
            ps.setArray(1, c.createArrayOf("bigint", ids));
            ps.setArray(2, c.createArrayOf("text", payloads));
            ps.setLong(3, botId);
            List<Long> missing = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    missing.add(rs.getLong(1));
                }
            }
            return missing;
        } catch (SQLException e) {
            // Cannot prove the updates are stored: count them as missing rather than pass silently.
            return confirmed.stream().map(BotApiSimulator.QueuedUpdate::updateId).toList();
        }
    }
}
