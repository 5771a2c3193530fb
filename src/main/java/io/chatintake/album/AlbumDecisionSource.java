package io.chatintake.album;

import io.chatintake.support.FormerHeaderNames;
import io.chatintake.work.WorkItem;
import io.chatintake.work.WorkSource;
import java.sql.Connection;
import java.sql.SQLException;
import org.apache.camel.Message;

/**
 * A recorded album decision as business work: its handler (the {@code work:album-decision}
 * route, routes/handlers.yaml) receives it with the
 * decision as JSON. A {@code late} decision is a new snapshot for display; handlers must not
 * send anything to a customer again because of it.
 */
public final class AlbumDecisionSource extends WorkSource {
    public static final String KIND = "album-decision";

    public AlbumDecisionSource() {
        super(KIND);
    }

    @Override
    public void load(Connection connection, WorkItem item, Message message) throws SQLException {
        readRow(connection, """
                SELECT album_key, version, kind, jsonb_array_length(child_ids),
                       jsonb_build_object('album_key', album_key, 'version', version, 'kind', kind, 'child_ids', child_ids,
                                          'message_ids', message_ids, 'totals_seen', totals_seen, 'indexes_seen', indexes_seen,
                                          'completed_by', completed_by, 'decided_at', decided_at)::text
                  FROM album_decision WHERE id = ?""", item, rs -> {
            message.setHeader(AlbumChildSource.ALBUM_KEY, rs.getString(1));
            message.setHeader(AlbumDecisions.DECISION_VERSION, rs.getInt(2));
            message.setHeader(AlbumDecisions.DECISION_KIND, rs.getString(3));
            message.setHeader(AlbumConstants.CHILD_COUNT, rs.getInt(4));
            FormerHeaderNames.copy(message, AlbumConstants.FORMER_NAMES);
            message.setBody(rs.getString(5));
        });
    }
}
