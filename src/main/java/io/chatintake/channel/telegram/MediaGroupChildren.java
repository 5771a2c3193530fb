package io.chatintake.channel.telegram;

import io.chatintake.message.ChildMessageListener;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * The media-group parts among stored updates, derived into album children in {@code channel_message}
 * like any channel's (provider telegram-bot, account = bot id, conversation = chat id), and the
 * children's listeners (attachment rows, album scheduling), in the caller's transaction. Other
 * messages stay only in {@code telegram_update}: copying every text would double the write cost of
 * intake for nothing albums need. Files are described, not fetched: the attachment fetcher does that.
 * <p>
 * Deriving again is harmless: a child already stored is left as it is and its listeners are not
 * told again, so a transaction that dies after deriving is simply derived once more by the next one.
 */
final class MediaGroupChildren {
    // The children in their updates' row order; each returned with the inbox row it came from.
    static final String CHILDREN = """
            WITH msgs AS (
                SELECT u.id AS row_id, u.bot_id, u.update_id,
                       COALESCE(u.payload -> 'message', u.payload -> 'channel_post', u.payload -> 'business_message') AS m
                  FROM telegram_update u WHERE u.id = ANY (?::bigint[])),
            children AS (
                INSERT INTO channel_message (workspace, provider, account_id, conversation_id, message_id, message_type,
                                             text, caption, attachments, sent_at, album_id, first_event_id, last_event_at)
                SELECT '%s', '%s', bot_id::text, m -> 'chat' ->> 'id', m ->> 'message_id',
                       COALESCE((SELECT k FROM unnest(ARRAY['photo', 'video', 'document', 'audio', 'voice', 'animation',
                                                            'video_note', 'sticker', 'location', 'contact', 'text']) k
                                  WHERE jsonb_exists(m, k) LIMIT 1), 'unknown'),
                       m ->> 'text', m ->> 'caption',
                       (SELECT jsonb_agg(jsonb_build_object('telegram_bot_id', bot_id, 'telegram_file_id', f ->> 'file_id',
                                                            'file_unique_id', f ->> 'file_unique_id', 'kind', k,
                                                            'file_size', f -> 'file_size', 'mime_type', f ->> 'mime_type',
                                                            'file_name', f ->> 'file_name'))
                          FROM (SELECT e.key AS k, CASE WHEN e.key = 'photo' THEN e.value -> -1 ELSE e.value END AS f
                                  FROM jsonb_each(m) e
                                 WHERE e.key IN ('photo', 'video', 'document', 'audio', 'voice', 'animation', 'video_note', 'sticker')) files),
                       to_timestamp((m ->> 'date')::bigint), m ->> 'media_group_id',
                       'telegram:' || bot_id || ':' || update_id, to_timestamp((m ->> 'date')::bigint)
                  FROM msgs WHERE m ->> 'media_group_id' IS NOT NULL AND m -> 'chat' ->> 'id' IS NOT NULL AND m ->> 'message_id' IS NOT NULL
                 ORDER BY row_id
                ON CONFLICT (workspace, provider, account_id, conversation_id, message_id) DO NOTHING
                RETURNING id, first_event_id)
            SELECT id, row_id FROM (
                SELECT DISTINCT ON (c.id) c.id, m.row_id
                  FROM children c JOIN msgs m ON c.first_event_id = 'telegram:' || m.bot_id || ':' || m.update_id
                 ORDER BY c.id, m.row_id) derived
             ORDER BY row_id, id""".formatted(TelegramUpdateStore.WORKSPACE, TelegramChannel.PROVIDER);

    private MediaGroupChildren() {
    }

    /**
     * Derives the children of these inbox rows (those that are not media-group parts give none) and
     * tells the listener about the new ones; no rows, no round trip.
     *
     * @param traces each row's traceparent (null while tracing is off)
     */
    static void derive(Connection c, ChildMessageListener listener, Collection<Long> rowIds, Map<Long, String> traces) throws SQLException {
        if (rowIds.isEmpty()) {
            return;
        }
        List<ChildMessageListener.StoredChild> children = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(CHILDREN)) {
            ps.setArray(1, c.createArrayOf("bigint", rowIds.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    children.add(new ChildMessageListener.StoredChild(rs.getLong(1), true, true, true, traces.get(rs.getLong(2))));
                }
            }
        }
        listener.stored(c, children);
    }

    /** Whether an update as Telegram sent it may be a media-group part: a cheap scan, the statement decides. */
    static boolean mayBePart(String json) {
        return json.contains("\"media_group_id\"");
    }
}
