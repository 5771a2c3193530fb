package io.chatintake.album;

import io.chatintake.work.WorkItem;
import io.chatintake.work.WorkSource;
import java.sql.Connection;
import java.sql.SQLException;
import org.apache.camel.Message;

/**
 * A child just given its album, on its way to the album ({@code work.handlers.album-child}, shipped as
 * {@code direct:album-child}): the album is decided at once if its children now agree on a total
 * they reach. Each child runs once (its work item is unique), and running it again changes
 * nothing: a decision is only made when the stored children differ from the last one.
 */
public final class AlbumChildSource extends WorkSource {
    public static final String KIND = "album-child";
    public static final String ALBUM_KEY = "AlbumKey";
    public static final String CHILD_ID = "AlbumChildId";
    public static final String INDEX = "AlbumIndex";
    public static final String TOTAL = "AlbumTotal";
    public static final String TELEGRAM_PROVIDER = "telegram-bot";

    public AlbumChildSource(String endpointUri) {
        super(KIND, endpointUri);
    }

    @Override
    public void load(Connection connection, WorkItem item, Message message) throws SQLException {
        readRow(connection, "SELECT " + AlbumKey.OF_CHILD + ", album_index, album_total FROM channel_message WHERE id = ?",
                item, rs -> {
                    message.setHeader(ALBUM_KEY, rs.getString(1));
                    message.setHeader(CHILD_ID, item.sourceId());
                    message.setHeader(INDEX, rs.getObject(2));
                    message.setHeader(TOTAL, rs.getObject(3));
                });
    }
}
