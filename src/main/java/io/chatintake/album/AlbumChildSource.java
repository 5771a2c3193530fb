package io.chatintake.album;

import io.chatintake.support.FormerHeaderNames;
import io.chatintake.work.RowWorkSource;
import io.chatintake.work.WorkItem;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.camel.Message;

/**
 * A child just given its album, on its way into the album's aggregation group
 * (the {@code work:album-child} route, routes/albums.yaml):
 * its id, index and total, and the album key it is correlated by. Each child runs once (its work
 * item is unique); run again, the group already holds it and nothing changes.
 * <p>
 * Loading a child also reads its album's group as stored, a run's children in one query: the
 * stored children, whether the album is open, and its deadline's quiet period. The child brings
 * them to the aggregator ({@link AlbumAggregation}), so aggregating it reads nothing more, and
 * {@link #COMPLETE} says whether they were complete, for a route that wants it.
 */
public final class AlbumChildSource extends RowWorkSource {
    public static final String KIND = "album-child";
    public static final String ALBUM_KEY = AlbumConstants.KEY;
    public static final String CHILD_ID = AlbumConstants.CHILD_ID;
    public static final String INDEX = AlbumConstants.INDEX;
    public static final String TOTAL = AlbumConstants.TOTAL;
    /** The channel that stored the child (a channel may give its albums their own quiet period: {@link QuietPeriod}). */
    public static final String PROVIDER = AlbumConstants.PROVIDER;
    /** Whether the album's children stored when this child was loaded agree on a total they reach. */
    public static final String COMPLETE = AlbumConstants.COMPLETE;
    /** The album's children stored when this child was loaded (a list of {@link AlbumState.Child}), this one among them. */
    public static final String STORED_CHILDREN = AlbumConstants.STORED_CHILDREN;
    /** Whether the album was an open group when this child was loaded (not decided, no completion of it in flight). */
    public static final String GROUP_OPEN = AlbumConstants.GROUP_OPEN;
    /** The quiet period the album's deadline was set with (deadline - last child), in milliseconds. */
    public static final String STORED_QUIET_MILLIS = AlbumConstants.STORED_QUIET_MILLIS;

    // With the child, its album's group as stored (AlbumAggregationRepository): one statement for a run of
    // children. Every child given an album has its album row (made in the transaction that stored it).
    private static final String SELECT = """
            SELECT m.id, m.album_key, m.album_index, m.album_total, s.ids, s.indexes, s.totals, m.provider, %s, %s
              FROM (SELECT id, provider, album_index, album_total, %s AS album_key FROM channel_message) m
              JOIN album a ON a.album_key = m.album_key
             CROSS JOIN LATERAL (%s) s
             WHERE m.id %%s""".formatted(AlbumAggregationRepository.IS_GROUP, AlbumAggregationRepository.QUIET_MILLIS, AlbumKey.OF_CHILD,
            AlbumAggregationRepository.CHILDREN_OF_ALBUM);

    public AlbumChildSource() {
        super(KIND, SELECT, 100);
    }

    @Override
    protected void fill(ResultSet row, WorkItem item, Message message) throws SQLException {
        // One instance per album key: the aggregator's timeout map keeps the key of an album's first
        // child and of its last, for every open album.
        message.setHeader(ALBUM_KEY, row.getString(2).intern());
        message.setHeader(CHILD_ID, item.sourceId());
        message.setHeader(INDEX, row.getObject(3));
        message.setHeader(TOTAL, row.getObject(4));
        message.setHeader(PROVIDER, row.getString(8));
        List<AlbumState.Child> stored = AlbumAggregationRepository.children(row.getArray(5), row.getArray(6), row.getArray(7));
        message.setHeader(COMPLETE, AlbumState.of(stored).complete());
        message.setHeader(STORED_CHILDREN, stored);
        message.setHeader(GROUP_OPEN, row.getBoolean(9));
        message.setHeader(STORED_QUIET_MILLIS, row.getLong(10));
        // The Aggregator's retries of this child learn through it that a completion of its album won.
        message.getExchange().setProperty(AlbumAggregation.REMOVAL_LOST, new AtomicBoolean());
        FormerHeaderNames.copy(message, AlbumConstants.FORMER_NAMES);
    }
}
