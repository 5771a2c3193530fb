package io.chatintake.message;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.stream.Collectors;

/**
 * Upserts child messages into {@code channel_message}, inside the caller's transaction (the one
 * that stores the event, so an event is never stored without its child or the other way round).
 * Delivery order is not guaranteed, so content follows the event that happened last
 * ({@code occurred_at}), not the one that arrived last; a deletion only marks the row.
 */
public final class ChannelMessageStore {
    /** The columns an event describes; merged column by column so a sparse event never blanks a field. */
    private static final List<String> CONTENT = List.of(
            "message_type", "text", "caption", "attachments", "sent_at", "album_id", "album_index", "album_total");

    /** The event being applied happened no earlier than the newest one applied so far. */
    private static final String EVENT_IS_NEWEST =
            "(channel_message.last_event_at IS NULL OR EXCLUDED.last_event_at >= channel_message.last_event_at)";

    private static final String INSERT = """
            INSERT INTO channel_message (workspace, provider, account_id, conversation_id, message_id,
                                         message_type, text, caption, attachments, sent_at,
                                         album_id, album_index, album_total,
                                         deleted_at, first_event_id, last_event_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, CAST(? AS jsonb), ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (workspace, provider, account_id, conversation_id, message_id) DO UPDATE SET
            """;

    private static final String TAIL = """
            ,
                deleted_at = COALESCE(channel_message.deleted_at, EXCLUDED.deleted_at),
                last_event_at = GREATEST(channel_message.last_event_at, EXCLUDED.last_event_at),
                updated_at = now()
            RETURNING id, (xmax = 0) AS inserted,
                      channel_message.album_id IS NOT NULL AND channel_message.album_id IS DISTINCT FROM
                          (SELECT o.album_id FROM channel_message o WHERE o.id = channel_message.id) AS album_assigned,
                      COALESCE(jsonb_typeof(channel_message.attachments) = 'array' AND channel_message.attachments <> '[]'::jsonb, false)
            """;

    /** message.received / message.updated: the newest event's values win, older ones only fill gaps. */
    private static final String UPSERT_CONTENT = INSERT + CONTENT.stream()
            .map(c -> "    " + c + " = CASE WHEN " + EVENT_IS_NEWEST + " THEN COALESCE(EXCLUDED." + c + ", channel_message." + c + ")"
                    + " ELSE COALESCE(channel_message." + c + ", EXCLUDED." + c + ") END")
            .collect(Collectors.joining(",\n")) + TAIL;

    /** message.deleted and the rest: existing values stay, only gaps are filled (and the first deletion kept). */
    private static final String UPSERT_FILL_ONLY = INSERT + CONTENT.stream()
            .map(c -> "    " + c + " = COALESCE(channel_message." + c + ", EXCLUDED." + c + ")")
            .collect(Collectors.joining(",\n")) + TAIL;

    private ChannelMessageStore() {
    }

    /**
     * The child's row, whether this event stored it for the first time (a redelivered child counts
     * once), and whether it gave the child its album: a child first seen through a reaction has no
     * album until its message.received arrives, and that write must bring it into its album.
     * (The sub-select in RETURNING reads the statement's snapshot, i.e. the row as it was before.)
     * {@code hasAttachments}: the row, as written, lists attachments.
     */
    public record Applied(long id, boolean inserted, boolean albumAssigned, boolean hasAttachments) {
    }

    public static Applied apply(Connection connection, String workspace, String eventId, Instant occurredAt, ChannelMessage m,
                         ChannelMessage.Change change) throws SQLException {
        String sql = change == ChannelMessage.Change.CONTENT ? UPSERT_CONTENT : UPSERT_FILL_ONLY;
        try (PreparedStatement ps = connection.prepareStatement(sql)) {
            int i = 0;
            ps.setString(++i, workspace);
            ps.setString(++i, m.provider());
            ps.setString(++i, m.accountId());
            ps.setString(++i, m.conversationId());
            ps.setString(++i, m.messageId());
            ps.setString(++i, m.messageType());
            ps.setString(++i, m.text());
            ps.setString(++i, m.caption());
            ps.setString(++i, m.attachmentsJson());
            ps.setObject(++i, timestamp(m.sentAt()), Types.TIMESTAMP_WITH_TIMEZONE);
            ps.setString(++i, m.albumId());
            ps.setObject(++i, m.albumIndex(), Types.INTEGER);
            ps.setObject(++i, m.albumTotal(), Types.INTEGER);
            Instant deletedAt = change == ChannelMessage.Change.DELETE ? (occurredAt != null ? occurredAt : Instant.now()) : null;
            ps.setObject(++i, timestamp(deletedAt), Types.TIMESTAMP_WITH_TIMEZONE);
            ps.setString(++i, eventId);
            ps.setObject(++i, timestamp(occurredAt), Types.TIMESTAMP_WITH_TIMEZONE);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new Applied(rs.getLong(1), rs.getBoolean(2), rs.getBoolean(3), rs.getBoolean(4));
            }
        }
    }

    public static OffsetDateTime timestamp(Instant instant) {
        return instant == null ? null : OffsetDateTime.ofInstant(instant, ZoneOffset.UTC);
    }
}
