package io.chatintake.message;

import io.chatintake.store.SqlArrays;
import io.chatintake.store.UpsertRuns;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
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
        int n = rows.size();
        Object[][] values = new Object[n][];
        Boolean[] content = new Boolean[n];
        for (int row = 0; row < n; row++) {
            T r = rows.get(row);
            ChannelMessage.Change rowChange = change.apply(r);
            values[row] = childRow(message.apply(r), rowChange, eventId.apply(r), occurredAt.apply(r));
            content[row] = rowChange == ChannelMessage.Change.CONTENT;
        }
        for (int column = 0; column < CHILD_ROW_TYPES.length; column++) {
            // Typed Java arrays: the driver sends them in binary, so neither side escapes or parses an array literal.
            Object[] cells = CHILD_ROW_TYPES[column].newArray(n);
            for (int row = 0; row < n; row++) {
                cells[row] = values[row][column];
            }
            ps.setArray(i++, connection.createArrayOf(CHILD_ROW_TYPES[column].arrayType(), cells));
        }
        ps.setArray(i++, connection.createArrayOf("bool", content));
        return i;
    }

    /**
     * The CTE {@code child} of a statement about one event: its child as {@link #upsertFrom}
     * applies it, taken from 16 parameters ({@link #bindChildRow}) once for each row of
     * {@code from} (the event's row when it is new, none for a redelivery). Without the arrays,
     * joins and the unused kind of upsert, PostgreSQL runs it in half the time of a set of one.
     * {@code child} returns what {@link Applied} holds from its fifth column.
     */
    public static String upsertOneFrom(String from, ChannelMessage.Change change) {
        return """
                lone_child AS (SELECT CAST(? AS text) AS workspace, CAST(? AS text) AS provider, CAST(? AS text) AS account_id,
                                      CAST(? AS text) AS conversation_id, CAST(? AS text) AS message_id, CAST(? AS text) AS message_type,
                                      CAST(? AS text) AS text, CAST(? AS text) AS caption, CAST(? AS jsonb) AS attachments,
                                      CAST(? AS timestamptz) AS sent_at, CAST(? AS text) AS album_id, CAST(? AS int) AS album_index,
                                      CAST(? AS int) AS album_total, CAST(? AS timestamptz) AS deleted_at, CAST(? AS text) AS first_event_id,
                                      CAST(? AS timestamptz) AS last_event_at, 1 AS n
                                 FROM %s),
                child AS (%s)""".formatted(from,
                (change == ChannelMessage.Change.CONTENT ? UPSERT_CONTENT : UPSERT_FILL_ONLY).formatted("lone_child", "true"));
    }

    /**
     * Binds the 16 parameters of {@link #upsertOneFrom} from {@code first}: what the event says about its child.
     * @return the next parameter index
     */
    public static int bindChildRow(PreparedStatement ps, int first, String workspace, ChannelMessage message, ChannelMessage.Change change,
                                   String eventId, Instant occurredAt) throws SQLException {
        int i = first;
        ps.setString(i++, workspace);
        Object[] values = childRow(message, change, eventId, occurredAt);
        for (int column = 0; column < CHILD_ROW_TYPES.length; column++) {
            ps.setObject(i++, values[column], CHILD_ROW_TYPES[column].sqlType());
        }
        return i;
    }

    /** How a column of {@link #childRow} is bound: alone, or as an array of such values. */
    private record ChildColumn(String arrayType, Class<?> javaType, int sqlType) {
        static final ChildColumn TEXT = new ChildColumn("text", String.class, Types.VARCHAR);
        static final ChildColumn INTEGER = new ChildColumn("int4", Integer.class, Types.INTEGER);

        Object[] newArray(int length) {
            return (Object[]) java.lang.reflect.Array.newInstance(javaType, length);
        }
    }

    /** The columns of {@link #childRow}: all text (timestamps as ISO 8601, cast in SQL) but the album's index and total. */
    private static final ChildColumn[] CHILD_ROW_TYPES = {
            ChildColumn.TEXT, ChildColumn.TEXT, ChildColumn.TEXT, ChildColumn.TEXT, ChildColumn.TEXT, ChildColumn.TEXT, ChildColumn.TEXT,
            ChildColumn.TEXT, ChildColumn.TEXT, ChildColumn.TEXT, ChildColumn.INTEGER, ChildColumn.INTEGER, ChildColumn.TEXT,
            ChildColumn.TEXT, ChildColumn.TEXT};

    /**
     * What an event says about its child, after the workspace, in the order both statements read
     * it: provider, account, conversation, message id, type, text, caption, attachments, sent at,
     * album id, index and total, deleted at (a deletion's time), first event id, last event at.
     */
    private static Object[] childRow(ChannelMessage m, ChannelMessage.Change change, String eventId, Instant occurredAt) {
        return new Object[] {
                field(m, ChannelMessage::provider), field(m, ChannelMessage::accountId), field(m, ChannelMessage::conversationId),
                field(m, ChannelMessage::messageId), field(m, ChannelMessage::messageType), field(m, ChannelMessage::text),
                field(m, ChannelMessage::caption), field(m, ChannelMessage::attachmentsJson), field(m, c -> SqlArrays.timestamp(c.sentAt())),
                field(m, ChannelMessage::albumId), field(m, ChannelMessage::albumIndex), field(m, ChannelMessage::albumTotal),
                change == ChannelMessage.Change.DELETE ? SqlArrays.timestamp(occurredAt != null ? occurredAt : Instant.now()) : null,
                eventId, SqlArrays.timestamp(occurredAt)};
    }

    private static <V> V field(ChannelMessage message, Function<ChannelMessage, V> column) {
        return message == null ? null : column.apply(message);
    }
}
