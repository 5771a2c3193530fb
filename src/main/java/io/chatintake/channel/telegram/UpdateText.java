package io.chatintake.channel.telegram;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;

/**
 * The searchable copy of stored updates' text ({@code telegram_update_text}, what a search for
 * "text contains" reads through its trigram index), written with their work items, after the batch
 * that stored them committed: indexing a long text costs several times storing it, and the commit
 * that lets Telegram's offset move should not wait for it. Its only writer; the copy goes with
 * its update (a foreign key) and with the update's content (a trigger).
 */
final class UpdateText {
    private static final String COPY = """
            INSERT INTO telegram_update_text (update_row_id, text)
            SELECT id, telegram_text(payload) FROM telegram_update WHERE id = ANY (?) AND telegram_text(payload) IS NOT NULL
            ON CONFLICT (update_row_id) DO NOTHING""";

    private UpdateText() {
    }

    /** Copies the text of these stored updates, in the caller's transaction; again for a row already copied does nothing. */
    static void copy(Connection c, List<Long> rowIds) throws SQLException {
        if (rowIds.isEmpty()) {
            return;
        }
        try (PreparedStatement ps = c.prepareStatement(COPY)) {
            ps.setArray(1, c.createArrayOf("bigint", rowIds.toArray()));
            ps.executeUpdate();
        }
    }
}
