package io.chatintake.album;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;

/**
 * The scoped album key (seed 003): workspace, provider, account, conversation and album id, as a
 * JSON array. The album id relates children; it never identifies one, and the same album id in
 * another conversation is another album. Built by the database from the child's own columns, so
 * every path (UnifyPort, Telegram) produces exactly the same text.
 */
public final class AlbumKey {
    /** The key of a {@code channel_message} row (or any row with the same columns). */
    static final String OF_CHILD = "jsonb_build_array(workspace, provider, account_id, conversation_id, album_id)::text";

    private AlbumKey() {
    }

    // A new child of an album: make sure its album exists and put the child on its way to the
    // aggregator. Called inside the transaction that stored the child, so a stored child always
    // has its aggregation scheduled (the durable outbox is the work_item row).
    private static final String SCHEDULE = """
            WITH child AS (
                SELECT id, workspace, provider, account_id, conversation_id, album_id, %s AS album_key
                  FROM channel_message WHERE id = ANY (?::bigint[]) AND album_id IS NOT NULL),
            albums AS (
                INSERT INTO album (album_key, workspace, provider, account_id, conversation_id, album_id)
                SELECT DISTINCT album_key, workspace, provider, account_id, conversation_id, album_id FROM child
                ON CONFLICT (album_key) DO UPDATE SET last_child_at = now())
            INSERT INTO work_item (kind, source_key, source_id, chat_key)
            SELECT 'album-child', 'album-child:' || id, id, album_key FROM child ORDER BY id
            ON CONFLICT ON CONSTRAINT work_item_source DO NOTHING""".formatted(OF_CHILD);

    /** Schedules the children among these rows that belong to an album; the others are single messages. */
    public static void scheduleChildren(Connection connection, List<Long> channelMessageIds) throws SQLException {
        if (channelMessageIds.isEmpty()) {
            return;
        }
        try (PreparedStatement ps = connection.prepareStatement(SCHEDULE)) {
            Array ids = connection.createArrayOf("bigint", channelMessageIds.toArray());
            ps.setArray(1, ids);
            ps.executeUpdate();
        }
    }
}
