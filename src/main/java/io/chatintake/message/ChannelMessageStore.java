package io.chatintake.message;

import io.chatintake.store.SqlArrays;
import io.chatintake.store.UpsertRuns;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
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

    /** Rows of the relation %1$s, in its order; %2$s picks the events of one kind. */
    private static final String INSERT = """
            INSERT INTO channel_message (workspace, provider, account_id, conversation_id, message_id,
                                         message_type, text, caption, attachments, sent_at,
                                         album_id, album_index, album_total,
                                         deleted_at, first_event_id, last_event_at)
            SELECT workspace, provider, account_id, conversation_id, message_id,
                   message_type, text, caption, attachments, sent_at, album_id, album_index, album_total,
                   deleted_at, first_event_id, last_event_at
              FROM %1$s WHERE %2$s ORDER BY n
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
                      COALESCE(jsonb_typeof(channel_message.attachments) = 'array' AND channel_message.attachments <> '[]'::jsonb,
                               false) AS has_attachments
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

    /**
     * CTEs that apply the rows of the relation {@code source} to their children, for a statement
     * that works out its children in SQL: {@code source} has the columns of
     * {@code channel_message} an event sets (workspace, provider, account_id, conversation_id,
     * message_id, message_type, text, caption, attachments, sent_at, album_id, album_index,
     * album_total, deleted_at, first_event_id, last_event_at), {@code content} (the event's
     * change is {@link ChannelMessage.Change#CONTENT}) and {@code n} (the order); each child
     * occurs once in it. {@code children} returns what {@link Applied} holds, keyed by
     * (provider, account_id, conversation_id, message_id).
     */
    public static String upsertFrom(String source) {
        return """
                child_content AS (%s),
                child_fill AS (%s),
                children AS (SELECT * FROM child_content UNION ALL SELECT * FROM child_fill)"""
                .formatted(UPSERT_CONTENT.formatted(source, "content"), UPSERT_FILL_ONLY.formatted(source, "NOT content"));
    }

    /**
     * The children's rows as {@link #upsertFrom} reads them, from 17 parameters bound by
     * {@link #bindChildRows}; a row without a message is all nulls but {@code n}.
     */
    public static final String CHILD_ROWS = """
            SELECT CAST(? AS text) AS workspace, m.provider, m.account_id, m.conversation_id, m.message_id,
                   m.message_type, m.text, m.caption, CAST(m.attachments AS jsonb) AS attachments,
                   CAST(m.sent_at AS timestamptz) AS sent_at, m.album_id, m.album_index, m.album_total,
                   CAST(m.deleted_at AS timestamptz) AS deleted_at, m.first_event_id,
                   CAST(m.last_event_at AS timestamptz) AS last_event_at, m.content, m.n
              FROM unnest(CAST(? AS text[]), CAST(? AS text[]), CAST(? AS text[]), CAST(? AS text[]),
                          CAST(? AS text[]), CAST(? AS text[]), CAST(? AS text[]), CAST(? AS text[]), CAST(? AS text[]),
                          CAST(? AS text[]), CAST(? AS int[]), CAST(? AS int[]),
                          CAST(? AS text[]), CAST(? AS text[]), CAST(? AS text[]), CAST(? AS boolean[]))
                   WITH ORDINALITY AS m(provider, account_id, conversation_id, message_id,
                                        message_type, text, caption, attachments, sent_at,
                                        album_id, album_index, album_total,
                                        deleted_at, first_event_id, last_event_at, content, n)""";

    private static final String APPLY = """
            WITH new_child AS (%s),
            %s
            SELECT provider, account_id, conversation_id, message_id, id, inserted, album_assigned, has_attachments FROM children
            """.formatted(CHILD_ROWS, upsertFrom("new_child"));

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
            return keyOf(message);
        }
    }

    /**
     * Applies the events to their children, in order, one statement per run of events about
     * distinct children; what each did is returned in the events' order.
     */
    public static List<Applied> applyAll(Connection connection, String workspace, List<MessageEvent> events) throws SQLException {
        Applied[] applied = new Applied[events.size()];
        for (List<Integer> run : UpsertRuns.of(events, MessageEvent::key)) {
            List<MessageEvent> these = run.stream().map(events::get).toList();
            try (PreparedStatement ps = connection.prepareStatement(APPLY)) {
                bindChildRows(connection, ps, 1, workspace, these, MessageEvent::message, MessageEvent::change, MessageEvent::eventId,
                        MessageEvent::occurredAt);
                Map<List<String>, Integer> positions = new HashMap<>();
                run.forEach(row -> positions.put(events.get(row).key(), row));
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        applied[positions.get(keyOf(rs, 1))] = appliedOf(rs, 5);
                    }
                }
            }
        }
        return Arrays.asList(applied);
    }

    /** The child key in the four columns from {@code first}. */
    private static List<String> keyOf(ResultSet rs, int first) throws SQLException {
        return Arrays.asList(rs.getString(first), rs.getString(first + 1), rs.getString(first + 2), rs.getString(first + 3));
    }

    /** The child key of a message. */
    public static List<String> keyOf(ChannelMessage message) {
        return Arrays.asList(message.provider(), message.accountId(), message.conversationId(), message.messageId());
    }

    /** What {@code children} returned in the four columns (id, inserted, album_assigned, has_attachments) from {@code first}. */
    public static Applied appliedOf(ResultSet rs, int first) throws SQLException {
        return new Applied(rs.getLong(first), rs.getBoolean(first + 1), rs.getBoolean(first + 2), rs.getBoolean(first + 3));
    }

    /**
     * Binds the 17 parameters of {@link #CHILD_ROWS} from {@code first}: what each row's event
     * says about its child (a row without a message binds nulls).
     * @return the next parameter index
     */
    public static <T> int bindChildRows(Connection connection, PreparedStatement ps, int first, String workspace, List<T> rows,
                                        Function<T, ChannelMessage> message, Function<T, ChannelMessage.Change> change,
                                        Function<T, String> eventId, Function<T, Instant> occurredAt) throws SQLException {
        int i = first;
        ps.setString(i++, workspace);
        ps.setArray(i++, SqlArrays.texts(connection, rows, r -> field(message.apply(r), ChannelMessage::provider)));
        ps.setArray(i++, SqlArrays.texts(connection, rows, r -> field(message.apply(r), ChannelMessage::accountId)));
        ps.setArray(i++, SqlArrays.texts(connection, rows, r -> field(message.apply(r), ChannelMessage::conversationId)));
        ps.setArray(i++, SqlArrays.texts(connection, rows, r -> field(message.apply(r), ChannelMessage::messageId)));
        ps.setArray(i++, SqlArrays.texts(connection, rows, r -> field(message.apply(r), ChannelMessage::messageType)));
        ps.setArray(i++, SqlArrays.texts(connection, rows, r -> field(message.apply(r), ChannelMessage::text)));
        ps.setArray(i++, SqlArrays.texts(connection, rows, r -> field(message.apply(r), ChannelMessage::caption)));
        ps.setArray(i++, SqlArrays.texts(connection, rows, r -> field(message.apply(r), ChannelMessage::attachmentsJson)));
        ps.setArray(i++, SqlArrays.texts(connection, rows, r -> field(message.apply(r), m -> SqlArrays.timestamp(m.sentAt()))));
        ps.setArray(i++, SqlArrays.texts(connection, rows, r -> field(message.apply(r), ChannelMessage::albumId)));
        ps.setArray(i++, SqlArrays.integers(connection, rows, r -> field(message.apply(r), ChannelMessage::albumIndex)));
        ps.setArray(i++, SqlArrays.integers(connection, rows, r -> field(message.apply(r), ChannelMessage::albumTotal)));
        ps.setArray(i++, SqlArrays.texts(connection, rows, r -> change.apply(r) == ChannelMessage.Change.DELETE
                ? SqlArrays.timestamp(occurredAt.apply(r) != null ? occurredAt.apply(r) : Instant.now()) : null));
        ps.setArray(i++, SqlArrays.texts(connection, rows, eventId));
        ps.setArray(i++, SqlArrays.texts(connection, rows, r -> SqlArrays.timestamp(occurredAt.apply(r))));
        ps.setArray(i++, connection.createArrayOf("bool", rows.stream().map(r -> change.apply(r) == ChannelMessage.Change.CONTENT).toArray()));
        return i;
    }

    private static <V> V field(ChannelMessage message, Function<ChannelMessage, V> column) {
        return message == null ? null : column.apply(message);
    }
}
