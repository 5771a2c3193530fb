package io.chatintake.album;

import io.chatintake.work.RowWorkSource;
import io.chatintake.work.WorkItem;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import org.apache.camel.Message;

/**
 * A child just given its album, on its way into the album's aggregation group
 * ({@code work.handlers.album-child}, shipped as {@code direct:album-child}, routes/albums.yaml):
 * its id, index and total, and the album key it is correlated by. Each child runs once (its work
 * item is unique); run again, the group already holds it and nothing changes.
 * <p>
 * Loading a child also looks at its album's stored children ({@link #COMPLETE}), a run's children
 * in one query: what the database held when the child was loaded, for a route that wants it
 * (the shipped route completes on its group's own count, which a child stored but not yet
 * aggregated cannot reach early).
 */
public final class AlbumChildSource extends RowWorkSource {
    public static final String KIND = "album-child";
    public static final String ALBUM_KEY = "AlbumKey";
    public static final String CHILD_ID = "AlbumChildId";
    public static final String INDEX = "AlbumIndex";
    public static final String TOTAL = "AlbumTotal";
    /** The channel that stored the child ({@link #TELEGRAM_PROVIDER} albums have their own quiet period). */
    public static final String PROVIDER = "AlbumProvider";
    /** Whether the album's children stored when this child was loaded agree on a total they reach. */
    public static final String COMPLETE = "AlbumComplete";
    public static final String TELEGRAM_PROVIDER = "telegram-bot";

    private static final String SELECT = """
            SELECT m.id, %s, m.album_index, m.album_total, s.ids, s.indexes, s.totals, m.provider
              FROM channel_message m
             CROSS JOIN LATERAL (SELECT array_agg(c.id) AS ids, array_agg(c.album_index) AS indexes, array_agg(c.album_total) AS totals
                     FROM channel_message c
                    WHERE c.workspace = m.workspace AND c.provider = m.provider AND c.account_id = m.account_id
                      AND c.conversation_id = m.conversation_id AND c.album_id = m.album_id) s
             WHERE m.id %%s""".formatted(AlbumKey.OF_CHILD);

    public AlbumChildSource(String endpointUri) {
        super(KIND, endpointUri, SELECT, 100);
    }

    @Override
    protected void fill(ResultSet row, WorkItem item, Message message) throws SQLException {
        message.setHeader(ALBUM_KEY, row.getString(2));
        message.setHeader(CHILD_ID, item.sourceId());
        message.setHeader(INDEX, row.getObject(3));
        message.setHeader(TOTAL, row.getObject(4));
        message.setHeader(PROVIDER, row.getString(8));
        Long[] ids = (Long[]) row.getArray(5).getArray();
        Integer[] indexes = (Integer[]) row.getArray(6).getArray();
        Integer[] totals = (Integer[]) row.getArray(7).getArray();
        List<AlbumState.Child> stored = new ArrayList<>(ids.length);
        for (int i = 0; i < ids.length; i++) {
            stored.add(new AlbumState.Child(ids[i], indexes[i], totals[i]));
        }
        message.setHeader(COMPLETE, AlbumState.of(stored).complete());
    }
}
