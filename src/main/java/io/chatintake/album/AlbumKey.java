package io.chatintake.album;

import io.chatintake.message.ChildMessageListener;
import io.chatintake.store.PlannedEachTime;
import io.chatintake.work.WorkQueue;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The scoped album key: workspace, provider, account, conversation and album id, as a
 * JSON array. The album id relates children; it never identifies one, and the same album id in
 * another conversation is another album. Built by the database from the child's own columns, so
 * every channel's path produces exactly the same text.
 */
public final class AlbumKey {
    /** The key of a {@code channel_message} row (or any row with the same columns). */
    static final String OF_CHILD = "jsonb_build_array(workspace, provider, account_id, conversation_id, album_id)::text";

    private AlbumKey() {
    }

    // A child given its album: make sure the album exists, move its deadline to now + the quiet
    // period, and put the child on its way to the album (a count check that may decide at once).
    // Runs inside the transaction that stored the child, so a stored child always has its album
    // work scheduled and its deadline in the database (the durable outbox is the work item; the
    // deadline is what any live process decides by, whichever process stored the child).
    // Planned at each execution: the plan kept from a nearly empty channel_message read the whole
    // table for each page of children.
    private static final String SCHEDULE = """
            WITH child AS (
                SELECT id, workspace, provider, account_id, conversation_id, album_id, %s AS album_key
                  FROM channel_message WHERE id = ANY (?::bigint[]) AND album_id IS NOT NULL),
            albums AS (
                INSERT INTO album (album_key, workspace, provider, account_id, conversation_id, album_id, decide_after)
                SELECT DISTINCT album_key, workspace, provider, account_id, conversation_id, album_id,
                       now() + make_interval(secs => COALESCE(
                           (SELECT q.secs FROM unnest(?::text[], ?::float8[]) q (provider, secs) WHERE q.provider = child.provider), ?))
                  FROM child
                ON CONFLICT (album_key) DO UPDATE SET last_child_at = now(), decide_after = EXCLUDED.decide_after)
            SELECT id, album_key FROM child ORDER BY id""".formatted(OF_CHILD);

    /**
     * The listener that schedules children into their albums, with these quiet periods. Only a
     * message with an album id can give its child an album.
     */
    public static ChildMessageListener scheduler(QuietPeriods quietPeriods) {
        return ChildMessageListener.of(message -> message.albumId() != null,
                (connection, children) -> scheduleChildren(connection, children, quietPeriods));
    }

    /** Schedules the children among these rows that were just given an album; the others are single messages (or known already). */
    private static void scheduleChildren(Connection connection, List<ChildMessageListener.StoredChild> children,
                                         QuietPeriods quietPeriods) throws SQLException {
        Map<Long, String> traces = new HashMap<>();
        children.stream().filter(ChildMessageListener.StoredChild::albumAssigned).forEach(c -> traces.put(c.id(), c.traceContext()));
        if (traces.isEmpty()) {
            return;
        }
        Object[] ids = traces.keySet().toArray();
        List<WorkQueue.NewWork> work = new ArrayList<>();
        try (PreparedStatement ps = PlannedEachTime.prepare(connection, SCHEDULE)) {
            ps.setArray(1, connection.createArrayOf("bigint", ids));
            ps.setArray(2, connection.createArrayOf("text", quietPeriods.byProvider().keySet().toArray()));
            ps.setArray(3, connection.createArrayOf("float8", quietPeriods.byProvider().values().stream().map(AlbumKey::seconds).toArray()));
            ps.setDouble(4, seconds(quietPeriods.other()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    long child = rs.getLong(1);
                    work.add(new WorkQueue.NewWork(AlbumChildSource.KIND, AlbumChildSource.KIND + ":" + child, child, rs.getString(2), traces.get(child)));
                }
            }
        }
        WorkQueue.schedule(connection, work);
    }

    private static double seconds(Duration period) {
        return period.toMillis() / 1000.0;
    }
}
