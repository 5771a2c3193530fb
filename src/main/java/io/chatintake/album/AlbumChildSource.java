package io.chatintake.album;

import io.chatintake.work.WorkItem;
import io.chatintake.work.WorkSource;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import org.apache.camel.Message;

/**
 * A stored album child on its way into the aggregator ({@code work.handlers.album-child}, shipped as
 * {@code direct:album-child}). Each child
 * enters once (its work item is unique), so a redelivered child never counts twice; should it
 * run again after a crash, the aggregation strategy ignores a child it already holds.
 */
public final class AlbumChildSource extends WorkSource {
    public static final String KIND = "album-child";
    public static final String ALBUM_KEY = "AlbumKey";
    public static final String CHILD_ID = "AlbumChildId";
    public static final String INDEX = "AlbumIndex";
    public static final String TOTAL = "AlbumTotal";
    /** How long the album must stay quiet before it is decided without a consistent total. */
    public static final String QUIET_PERIOD_MILLIS = "AlbumQuietPeriodMillis";
    static final String TELEGRAM_PROVIDER = "telegram-bot";

    private final Duration quietPeriod;
    private final Duration telegramQuietPeriod;

    public AlbumChildSource(String endpointUri, Duration quietPeriod, Duration telegramQuietPeriod) {
        super(KIND, endpointUri);
        this.quietPeriod = quietPeriod;
        this.telegramQuietPeriod = telegramQuietPeriod;
    }

    @Override
    public void load(Connection connection, WorkItem item, Message message) throws SQLException {
        readRow(connection, "SELECT " + AlbumKey.OF_CHILD + ", provider, album_index, album_total FROM channel_message WHERE id = ?",
                item, rs -> {
                    Integer index = (Integer) rs.getObject(3);
                    Integer total = (Integer) rs.getObject(4);
                    message.setHeader(ALBUM_KEY, rs.getString(1));
                    message.setHeader(CHILD_ID, item.sourceId());
                    message.setHeader(INDEX, index);
                    message.setHeader(TOTAL, total);
                    // Telegram albums have no total: only a quiet period can close them.
                    Duration quiet = TELEGRAM_PROVIDER.equals(rs.getString(2)) ? telegramQuietPeriod : quietPeriod;
                    message.setHeader(QUIET_PERIOD_MILLIS, quiet.toMillis());
                    message.setBody(AlbumState.child(item.sourceId(), index, total));
                });
    }
}
