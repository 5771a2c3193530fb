package io.chatintake.message;

import io.chatintake.store.SqlArrays;
import io.chatintake.store.UpsertRounds;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
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

    /** Many rows in one statement: one array per column, unnested in the given order. */
    private static final String INSERT = """
            INSERT INTO channel_message (workspace, provider, account_id, conversation_id, message_id,
                                         message_type, text, caption, attachments, sent_at,
                                         album_id, album_index, album_total,
                                         deleted_at, first_event_id, last_event_at)
            SELECT ?, m.provider, m.account_id, m.conversation_id, m.message_id,
                   m.message_type, m.text, m.caption, CAST(m.attachments AS jsonb), CAST(m.sent_at AS timestamptz),
                   m.album_id, m.album_index, m.album_total,
                   CAST(m.deleted_at AS timestamptz), m.first_event_id, CAST(m.last_event_at AS timestamptz)
              FROM unnest(CAST(? AS text[]), CAST(? AS text[]), CAST(? AS text[]), CAST(? AS text[]),
                          CAST(? AS text[]), CAST(? AS text[]), CAST(? AS text[]), CAST(? AS text[]), CAST(? AS text[]),
                          CAST(? AS text[]), CAST(? AS int[]), CAST(? AS int[]),
                          CAST(? AS text[]), CAST(? AS text[]), CAST(? AS text[]))
                   WITH ORDINALITY AS m(provider, account_id, conversation_id, message_id,
                                        message_type, text, caption, attachments, sent_at,
                                        album_id, album_index, album_total,
                                        deleted_at, first_event_id, last_event_at, n)
             ORDER BY m.n
            ON CONFLICT (workspace, provider, account_id, conversation_id, message_id) DO UPDATE SET
            """;

    private static final String TAIL = """
            ,
                deleted_at = COALESCE(channel_message.deleted_at, EXCLUDED.deleted_at),
                last_event_at = GREATEST(channel_message.last_event_at, EXCLUDED.last_event_at),
                updated_at = now()
            RETURNING provider, account_id, conversation_id, message_id, id, (xmax = 0) AS inserted,
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

    /** An event about a child message: what it says about the child, and when it happened. */
    public record MessageEvent(String eventId, Instant occurredAt, ChannelMessage message, ChannelMessage.Change change) {
        private List<String> key() {
            return Arrays.asList(message.provider(), message.accountId(), message.conversationId(), message.messageId());
        }
    }

    /**
     * Applies the events to their children, in order, in a few statements (one per round of
     * distinct children and kind of change); what each did is returned in the events' order.
     */
    public static List<Applied> applyAll(Connection connection, String workspace, List<MessageEvent> events) throws SQLException {
        Applied[] applied = new Applied[events.size()];
        for (List<Integer> round : UpsertRounds.of(events, MessageEvent::key)) {
            Map<Boolean, List<Integer>> byKind = round.stream()
                    .collect(Collectors.partitioningBy(i -> events.get(i).change() == ChannelMessage.Change.CONTENT));
            for (Map.Entry<Boolean, List<Integer>> kind : byKind.entrySet()) {
                if (!kind.getValue().isEmpty()) {
                    upsert(connection, workspace, kind.getKey() ? UPSERT_CONTENT : UPSERT_FILL_ONLY, events, kind.getValue(), applied);
                }
            }
        }
        return Arrays.asList(applied);
    }

    private static void upsert(Connection connection, String workspace, String sql, List<MessageEvent> events, List<Integer> rows,
                               Applied[] applied) throws SQLException {
        List<MessageEvent> these = rows.stream().map(events::get).toList();
        try (PreparedStatement ps = connection.prepareStatement(sql)) {
            int i = 0;
            ps.setString(++i, workspace);
            ps.setArray(++i, SqlArrays.texts(connection, these, e -> e.message().provider()));
            ps.setArray(++i, SqlArrays.texts(connection, these, e -> e.message().accountId()));
            ps.setArray(++i, SqlArrays.texts(connection, these, e -> e.message().conversationId()));
            ps.setArray(++i, SqlArrays.texts(connection, these, e -> e.message().messageId()));
            ps.setArray(++i, SqlArrays.texts(connection, these, e -> e.message().messageType()));
            ps.setArray(++i, SqlArrays.texts(connection, these, e -> e.message().text()));
            ps.setArray(++i, SqlArrays.texts(connection, these, e -> e.message().caption()));
            ps.setArray(++i, SqlArrays.texts(connection, these, e -> e.message().attachmentsJson()));
            ps.setArray(++i, SqlArrays.texts(connection, these, e -> SqlArrays.timestamp(e.message().sentAt())));
            ps.setArray(++i, SqlArrays.texts(connection, these, e -> e.message().albumId()));
            ps.setArray(++i, SqlArrays.integers(connection, these, e -> e.message().albumIndex()));
            ps.setArray(++i, SqlArrays.integers(connection, these, e -> e.message().albumTotal()));
            ps.setArray(++i, SqlArrays.texts(connection, these, e -> e.change() == ChannelMessage.Change.DELETE
                    ? SqlArrays.timestamp(e.occurredAt() != null ? e.occurredAt() : Instant.now()) : null));
            ps.setArray(++i, SqlArrays.texts(connection, these, MessageEvent::eventId));
            ps.setArray(++i, SqlArrays.texts(connection, these, e -> SqlArrays.timestamp(e.occurredAt())));
            Map<List<String>, Integer> positions = new HashMap<>();
            rows.forEach(row -> positions.put(events.get(row).key(), row));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    List<String> key = Arrays.asList(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4));
                    applied[positions.get(key)] = new Applied(rs.getLong(5), rs.getBoolean(6), rs.getBoolean(7), rs.getBoolean(8));
                }
            }
        }
    }
}
