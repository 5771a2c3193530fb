package io.chatintake.attachment;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.chatintake.config.Secret;
import io.chatintake.message.ChildMessageListener;
import io.chatintake.work.WorkQueue;
import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;

/**
 * The attachments of child messages, one row each with its own status: pending -> stored, or
 * expired (the temporary URL is gone), too_large (over the cap, or no URL at all: UnifyPort's
 * {@code is_big_file}), failed (every attempt used). Rows and their download work are written in
 * the transaction that stores the child, so a stored child never misses its downloads, and
 * nothing here waits for the album.
 */
public final class AttachmentStore {
    private static final ObjectMapper JSON = new ObjectMapper();

    public static final String KIND = "attachment";

    /** What the fetcher needs to know about one attachment. The URL is a secret. */
    public record Attachment(long id, String source, Secret url, Long telegramBotId, String telegramBotName,
                             String telegramFileId, Long declaredSize, String declaredType, String status) {
        public boolean telegram() {
            return "telegram-file".equals(source);
        }
    }

    /** How a download ended, as recorded on the row. */
    public record Outcome(String status, String error, String sha256, Long sizeBytes, String contentType, String mediaPath) {
        public static Outcome stored(String sha256, long size, String contentType, String mediaPath) {
            return new Outcome("stored", null, sha256, size, contentType, mediaPath);
        }

        public static Outcome of(String status, String error) {
            return new Outcome(status, error, null, null, null, null);
        }
    }

    private static final String SELECT_ELEMENTS = """
            SELECT id, attachments::text FROM channel_message
             WHERE id = ANY (?::bigint[]) AND jsonb_typeof(attachments) = 'array' AND attachments <> '[]'::jsonb ORDER BY id""";

    /**
     * A redelivered child changes nothing; a new URL (a message.updated) replaces one that did not
     * work yet, and the attachment is fetched again. A stored file is never replaced.
     */
    private static final String UPSERT = """
            INSERT INTO message_attachment (channel_message_id, position, source, url, telegram_bot_id, telegram_file_id,
                                            title, declared_size, declared_type, status)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT ON CONSTRAINT message_attachment_position DO UPDATE
               SET url = EXCLUDED.url, status = 'pending', last_error = NULL, updated_at = now()
             WHERE message_attachment.status IN ('pending', 'failed', 'expired')
               AND EXCLUDED.url IS NOT NULL AND message_attachment.url IS DISTINCT FROM EXCLUDED.url
            RETURNING id, status""";

    private static final String LOAD = """
            SELECT a.id, a.source, a.url, a.telegram_bot_id, c.bot_name, a.telegram_file_id, a.declared_size,
                   a.declared_type, a.status
              FROM message_attachment a LEFT JOIN telegram_checkpoint c ON c.bot_id = a.telegram_bot_id
             WHERE a.id = ?""";

    private static final String ATTEMPT = """
            UPDATE message_attachment SET attempts = attempts + 1, last_error = ?, updated_at = now()
             WHERE id = ? AND url IS NOT DISTINCT FROM ?""";

    /** The outcome belongs to the URL it came from: a URL refreshed meanwhile is fetched again instead. */
    private static final String RECORD = """
            UPDATE message_attachment
               SET status = ?, last_error = ?, sha256 = ?, size_bytes = ?, content_type = ?, media_path = ?,
                   attempts = attempts + 1, updated_at = now(),
                   stored_at = CASE WHEN ? = 'stored' THEN now() ELSE stored_at END
             WHERE id = ? AND url IS NOT DISTINCT FROM ?""";

    private final DataSource dataSource;

    public AttachmentStore(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /**
     * The listener that records the attachments of children, inside the caller's (intake)
     * transaction, right after they were upserted, and schedules a download for each new or
     * refreshed one. A message that lists no attachments changes none: a child's attachments only
     * change with an event that lists them, and were recorded with it.
     */
    public static final ChildMessageListener RECORDER = ChildMessageListener.of(message -> message.attachmentsJson() != null,
            AttachmentStore::recordChildren);

    private static void recordChildren(Connection connection, List<ChildMessageListener.StoredChild> children) throws SQLException {
        record(connection, children.stream().filter(ChildMessageListener.StoredChild::hasAttachments)
                .map(ChildMessageListener.StoredChild::id).toList());
    }

    public static void recordFor(Connection connection, long channelMessageId) throws SQLException {
        record(connection, List.of(channelMessageId));
    }

    /** One query reads the attachments of the children that list any. */
    private static void record(Connection connection, List<Long> channelMessageIds) throws SQLException {
        if (channelMessageIds.isEmpty()) {
            return;
        }
        Map<Long, String> elements = new LinkedHashMap<>();
        try (PreparedStatement ps = connection.prepareStatement(SELECT_ELEMENTS)) {
            ps.setArray(1, connection.createArrayOf("bigint", channelMessageIds.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    elements.put(rs.getLong(1), rs.getString(2));
                }
            }
        }
        for (Map.Entry<Long, String> child : elements.entrySet()) {
            JsonNode list = parse(child.getKey(), child.getValue());
            for (int position = 0; position < list.size(); position++) {
                try (PreparedStatement ps = connection.prepareStatement(UPSERT)) {
                    bind(ps, child.getKey(), position, list.get(position));
                    try (ResultSet rs = ps.executeQuery()) {
                        if (rs.next() && "pending".equals(rs.getString(2))) {
                            schedule(connection, rs.getLong(1));
                        }
                    }
                }
            }
        }
    }

    private static JsonNode parse(long channelMessageId, String json) throws SQLException {
        try {
            return JSON.readTree(json);
        } catch (IOException e) {
            // jsonb always parses; anything else is a bug, and the intake transaction must not commit half.
            throw new SQLException("attachments of channel_message " + channelMessageId + " are not JSON", e);
        }
    }

    /**
     * Two element shapes: UnifyPort's as the provider sends them (only {@code url} can be relied
     * on), and the normalised Telegram one ({@code telegram_bot_id}, {@code telegram_file_id}, ...).
     */
    private static void bind(PreparedStatement ps, long channelMessageId, int position, JsonNode a) throws SQLException {
        boolean telegram = a.hasNonNull("telegram_file_id");
        String url = telegram ? null : text(a, "url");
        boolean available = telegram ? a.path("telegram_bot_id").canConvertToLong() : url != null && !a.path("metadata").path("is_big_file").asBoolean(false);
        int i = 0;
        ps.setLong(++i, channelMessageId);
        ps.setInt(++i, position);
        ps.setString(++i, telegram ? "telegram-file" : "url");
        ps.setString(++i, available ? url : null);
        ps.setObject(++i, telegram && available ? a.get("telegram_bot_id").asLong() : null, Types.BIGINT);
        ps.setString(++i, telegram ? text(a, "telegram_file_id") : null);
        ps.setString(++i, text(a, telegram ? "file_name" : "title"));
        JsonNode size = a.path(telegram ? "file_size" : "size");
        ps.setObject(++i, size.canConvertToLong() ? size.asLong() : null, Types.BIGINT);
        ps.setString(++i, text(a, "mime_type"));
        ps.setString(++i, available ? "pending" : "too_large");
    }

    private static String text(JsonNode node, String field) {
        JsonNode value = node.path(field);
        return value.isValueNode() && !value.isNull() && !value.asText().isEmpty() ? value.asText() : null;
    }

    /** A refreshed attachment's earlier work item (done, parked or still retrying) runs again from the start. */
    private static void schedule(Connection connection, long attachmentId) throws SQLException {
        WorkQueue.scheduleAgain(connection, new WorkQueue.NewWork(KIND, KIND + ":" + attachmentId, attachmentId, null));
    }

    /** The attachment of a work item, or an exception when its row is gone. */
    public static Attachment load(Connection connection, long id) throws SQLException {
        try (PreparedStatement ps = connection.prepareStatement(LOAD)) {
            ps.setLong(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new SQLException("message_attachment row " + id + " is missing");
                }
                String url = rs.getString(3);
                return new Attachment(rs.getLong(1), rs.getString(2), url == null ? null : Secret.of(url),
                        (Long) rs.getObject(4), rs.getString(5), rs.getString(6), (Long) rs.getObject(7), rs.getString(8),
                        rs.getString(9));
            }
        }
    }

    /** A failed attempt that will be retried: the status stays pending. */
    public void attemptFailed(Attachment attachment, String error) throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(ATTEMPT)) {
            ps.setString(1, error);
            ps.setLong(2, attachment.id());
            ps.setString(3, reveal(attachment.url()));
            ps.executeUpdate();
        }
    }

    public void record(Attachment attachment, Outcome outcome) throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(RECORD)) {
            int i = 0;
            ps.setString(++i, outcome.status());
            ps.setString(++i, outcome.error());
            ps.setString(++i, outcome.sha256());
            ps.setObject(++i, outcome.sizeBytes(), Types.BIGINT);
            ps.setString(++i, outcome.contentType());
            ps.setString(++i, outcome.mediaPath());
            ps.setString(++i, outcome.status());
            ps.setLong(++i, attachment.id());
            ps.setString(++i, reveal(attachment.url()));
            ps.executeUpdate();
        }
    }

    private static String reveal(Secret url) {
        return url == null ? null : url.reveal();
    }
}
