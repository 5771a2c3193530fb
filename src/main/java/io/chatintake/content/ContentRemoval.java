package io.chatintake.content;

import io.chatintake.attachment.MediaStore;
import java.io.IOException;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/**
 * Removes the content of given rows, keeping the books: raw updates and event bodies, message
 * texts and captions, attachment URLs, titles and files, effect results become NULL and the row
 * records when ({@code content_removed_at}); ids, times, kinds, states and counts stay. Shared by
 * content expiry ({@code retention.content-days}) and erasure on request. Each call runs in the
 * caller's transaction; rows without content (gone already) are not counted again, rows given
 * content again since (an edit arriving later) are.
 */
public final class ContentRemoval {
    private final Connection c;
    private final MediaStore media;
    private final boolean dryRun;
    private final List<String> files = new ArrayList<>();

    /** @param media where attachment files are; null only with {@code dryRun} */
    public ContentRemoval(Connection c, MediaStore media, boolean dryRun) {
        this.c = c;
        this.media = media;
        this.dryRun = dryRun;
    }

    /** A channel's rows: the content it names ({@link ExpiringContent#clear()}). */
    public long rows(ExpiringContent table, List<Long> ids) throws SQLException {
        return update("UPDATE " + table.table() + " SET " + table.clear() + ", content_removed_at = now() WHERE id = ANY (?) AND ("
                + table.held() + ")", ids);
    }

    /** Texts, captions (album captions too: album children are messages) and the attachments described. */
    public long messages(List<Long> ids) throws SQLException {
        return update("""
                UPDATE channel_message SET text = NULL, caption = NULL, attachments = NULL, content_removed_at = now()
                 WHERE id = ANY (?) AND (text IS NOT NULL OR caption IS NOT NULL OR attachments IS NOT NULL)""", ids);
    }

    /** Effect results (a reply's answer, a call's response body). */
    public long effects(List<String> keys) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("""
                UPDATE outbound_effect SET result = NULL, content_removed_at = now()
                 WHERE effect_key = ANY (?) AND result IS NOT NULL""")) {
            ps.setArray(1, c.createArrayOf("text", keys.toArray()));
            return ps.executeUpdate();
        }
    }

    /**
     * Attachments: URL, title, file id, hash and file. A file is content-addressed and may be
     * shared with attachments of other messages: it goes only when no other attachment keeps it.
     */
    public long attachments(List<Long> ids) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("""
                WITH old AS (SELECT id, media_path FROM message_attachment WHERE id = ANY (?) AND (url IS NOT NULL OR title IS NOT NULL
                                OR telegram_file_id IS NOT NULL OR media_path IS NOT NULL OR sha256 IS NOT NULL) FOR UPDATE),
                     gone AS (UPDATE message_attachment a SET url = NULL, title = NULL, telegram_file_id = NULL, sha256 = NULL,
                                     media_path = NULL, content_removed_at = now(), updated_at = now()
                                FROM old WHERE a.id = old.id RETURNING old.media_path)
                SELECT (SELECT count(*) FROM gone),
                       ARRAY(SELECT DISTINCT g.media_path FROM gone g WHERE g.media_path IS NOT NULL
                              AND NOT EXISTS (SELECT 1 FROM message_attachment k
                                               WHERE k.media_path = g.media_path AND NOT (k.id = ANY (?))))""")) {
            Array array = c.createArrayOf("bigint", ids.toArray());
            ps.setArray(1, array);
            ps.setArray(2, array);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                for (Object path : (Object[]) rs.getArray(2).getArray()) {
                    files.add((String) path);
                }
                return rs.getLong(1);
            }
        }
    }

    /**
     * Whether the content a work item's handler reads is gone (expired or erased): running it
     * again could only fail or act on nothing, so operator retry refuses it.
     */
    public static boolean goneFor(Connection c, long workItemId) throws SQLException {
        List<ExpiringContent> channelTables = ExpiringContent.registered();
        StringBuilder removedAt = new StringBuilder("CASE w.kind");
        channelTables.stream().filter(t -> t.workKind() != null).forEach(t -> removedAt.append(" WHEN '").append(t.workKind())
                .append("' THEN ").append(removedAt(t.table())));
        removedAt.append(" WHEN 'album-child' THEN ").append(removedAt("channel_message"))
                .append(" WHEN 'attachment' THEN ").append(removedAt("message_attachment"))
                .append(" WHEN 'album-decision' THEN NULL ELSE ");
        // Kinds no table names (a channel's own event kinds) read the rows of the channels that name none.
        List<String> open = channelTables.stream().filter(t -> t.workKind() == null).map(t -> removedAt(t.table())).toList();
        removedAt.append(open.isEmpty() ? "NULL" : "COALESCE(" + String.join(", ", open) + ")").append(" END");
        try (PreparedStatement ps = c.prepareStatement("SELECT " + removedAt + " IS NOT NULL FROM work_item w WHERE w.id = ?")) {
            ps.setLong(1, workItemId);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() && rs.getBoolean(1);
            }
        }
    }

    private static String removedAt(String table) {
        return "(SELECT content_removed_at FROM " + table + " WHERE id = w.source_id)";
    }

    /** The files no attachment keeps any more (none removed yet). */
    public int files() {
        return files.size();
    }

    /**
     * Deletes the files of the attachments removed, before the caller commits: if one cannot be
     * deleted the transaction rolls back and a later pass (or the same erasure again) finds them.
     */
    public void deleteFiles() throws IOException {
        if (dryRun) {
            return;
        }
        for (String path : files) {
            media.delete(path);
        }
    }

    private long update(String sql, List<Long> ids) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setArray(1, c.createArrayOf("bigint", ids.toArray()));
            return ps.executeUpdate();
        }
    }
}
