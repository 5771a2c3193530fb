package io.chatintake.album;

import io.chatintake.message.ChildMessageListener;
import io.chatintake.work.WorkQueue;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
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
    // aggregator. Runs inside the transaction that stored the child, so a stored child always
    // has its aggregation scheduled (the durable outbox is the work item).
    private static final String SCHEDULE = """
            WITH child AS (
                SELECT id, workspace, provider, account_id, conversation_id, album_id, %s AS album_key
                  FROM channel_message WHERE id = ANY (?::bigint[]) AND album_id IS NOT NULL),
            albums AS (
                INSERT INTO album (album_key, workspace, provider, account_id, conversation_id, album_id)
                SELECT DISTINCT album_key, workspace, provider, account_id, conversation_id, album_id FROM child
                ON CONFLICT (album_key) DO UPDATE SET last_child_at = now())
            SELECT id, album_key FROM child ORDER BY id""".formatted(OF_CHILD);

    /** Schedules the new children among these rows that belong to an album; the others are single messages. */
    public static void scheduleChildren(Connection connection, List<ChildMessageListener.StoredChild> children) throws SQLException {
        Object[] ids = children.stream().filter(ChildMessageListener.StoredChild::inserted).map(ChildMessageListener.StoredChild::id).toArray();
        if (ids.length == 0) {
            return;
        }
        List<WorkQueue.NewWork> work = new ArrayList<>();
        try (PreparedStatement ps = connection.prepareStatement(SCHEDULE)) {
            ps.setArray(1, connection.createArrayOf("bigint", ids));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    long child = rs.getLong(1);
                    work.add(new WorkQueue.NewWork(AlbumChildSource.KIND, AlbumChildSource.KIND + ":" + child, child, rs.getString(2)));
                }
            }
        }
        WorkQueue.schedule(connection, work);
    }
}
