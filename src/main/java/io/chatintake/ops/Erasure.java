package io.chatintake.ops;

import io.chatintake.attachment.MediaStore;
import io.chatintake.channel.telegram.TelegramChannel;
import io.chatintake.channel.webhook.WebhookChannel;
import io.chatintake.config.ConfigurationException;
import io.chatintake.content.ContentRemoval;
import io.chatintake.work.WorkQueue;
import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import javax.sql.DataSource;

/**
 * Erasure on request ({@code erase --telegram|--conversation|--sender}, and the status page's
 * form): the content of one Telegram chat, one conversation or one sender's messages is removed
 * everywhere it is kept (raw updates and events, messages and album captions, attachments and
 * their files, effect results), and the work still waiting for it ends as {@code erased}. The
 * books stay: ids, times, kinds, states, counts. One transaction with its {@code erasure} and
 * {@code operator_action} rows (who, when, the key, the counts; never content). A handler running
 * already is left to finish. Running it again finds nothing left and changes nothing.
 */
final class Erasure {
    /** Kinds whose source is not the event or update table. */
    private static final String OTHER_KINDS = "('telegram-update', 'album-child', 'attachment', 'album-decision')";

    /** What to erase: {@code subject} telegram, conversation or sender, and its key as typed. */
    record Target(String subject, String key, List<String> parts) {
        static Target parse(String subject, String key) {
            List<String> parts = switch (subject) {
                case "telegram" -> split(key, 2, "BOT:CHAT_ID");
                case "conversation" -> split(key, 4, "CHANNEL:WORKSPACE:ACCOUNT:CONVERSATION");
                case "sender" -> split(key, 4, "CHANNEL:WORKSPACE:ACCOUNT:SENDER");
                default -> throw new ConfigurationException("erase takes --telegram, --conversation or --sender, not " + subject);
            };
            return new Target(subject, key, parts);
        }

        private static List<String> split(String key, int n, String shape) {
            String[] parts = key.split(":", n);
            if (parts.length != n || List.of(parts).stream().anyMatch(String::isBlank)) {
                throw new ConfigurationException("the key must be " + shape + ", got '" + key + "'");
            }
            return List.of(parts);
        }

        String label() {
            return subject + " " + key;
        }
    }

    /** How many rows of each kind lost (or, dry run, would lose) their content. */
    record Counts(Map<String, Long> rows) {
        String json() {
            return rows.entrySet().stream().map(e -> "\"" + e.getKey() + "\": " + e.getValue()).collect(Collectors.joining(", ", "{", "}"));
        }

        String sentence() {
            return rows.entrySet().stream().map(e -> e.getValue() + " " + e.getKey().replace('_', ' ')).collect(Collectors.joining(", "));
        }

        boolean any() {
            return rows.values().stream().anyMatch(n -> n > 0);
        }
    }

    /** The rows that hold the target's content. */
    private record Found(List<Long> updates, List<Long> events, List<Long> messages, List<Long> attachments, List<Long> items,
                         List<String> effects, List<Long> staged) {
    }

    private final DataSource dataSource;
    private final MediaStore media;

    Erasure(DataSource dataSource, MediaStore media) {
        this.dataSource = dataSource;
        this.media = media;
    }

    /** Erases (or with {@code dryRun} only counts, rolling everything back) and says what in one sentence. */
    OperatorActions.ActionResult erase(Target target, boolean dryRun, String by) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try {
                Found found = find(c, target);
                ContentRemoval removal = new ContentRemoval(c, media, dryRun);
                Map<String, Long> rows = new LinkedHashMap<>();
                rows.put("telegram_updates", removal.rows(TelegramChannel.CONTENT, found.updates()));
                rows.put("webhook_events", removal.rows(WebhookChannel.CONTENT, found.events()));
                rows.put("messages", removal.messages(found.messages()));
                rows.put("attachments", removal.attachments(found.attachments()));
                rows.put("media_files", (long) removal.files());
                rows.put("effect_results", removal.effects(found.effects()));
                rows.put("work_items_erased", (long) WorkQueue.erase(c, found.items().toArray(Long[]::new)));
                rows.put("staged_work_dropped", deleteStaged(c, found.staged()) + endUnderived(c, found.events()));
                Counts counts = new Counts(rows);
                String sentence;
                if (dryRun) {
                    c.rollback();
                    sentence = target.label() + " --dry-run: would erase " + counts.sentence() + " (nothing changed)";
                } else {
                    sentence = target.label() + (counts.any() ? " erased by " + by + ": " + counts.sentence()
                            : ": nothing left to erase (erased already, or never stored); nothing changed");
                    recordErasure(c, target, counts, by);
                    OperatorActions.record(c, by, "erase", target.label(), sentence);
                    removal.deleteFiles();
                    c.commit();
                }
                return new OperatorActions.ActionResult(!dryRun && counts.any(), sentence);
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            } catch (IOException e) {
                c.rollback();
                throw new SQLException("media file not deleted, nothing erased: " + e.getMessage(), e);
            }
        }
    }

    private Found find(Connection c, Target t) throws SQLException {
        List<String> p = t.parts();
        List<Long> updates = List.of();
        List<Long> events = List.of();
        List<Long> messages;
        List<Long> staged = List.of();
        if (t.subject().equals("telegram")) {
            String botId = botId(c, p.get(0));
            updates = ids(c, "SELECT source_id FROM work_item WHERE kind = 'telegram-update' AND chat_key = ? FOR UPDATE",
                    botId + ":" + p.get(1));
            messages = ids(c, """
                    SELECT id FROM channel_message WHERE provider = 'telegram-bot' AND account_id = ? AND conversation_id = ?
                       FOR UPDATE""", botId, p.get(1));
        } else {
            boolean sender = t.subject().equals("sender");
            // The conversation by the work's chat key (workspace:provider:account:conversation), or by
            // UnifyPort's envelope for events that name no message; a sender by the envelope.
            String byChatKey = """
                    EXISTS (SELECT 1 FROM work_item w WHERE w.source_id = e.id AND w.kind NOT IN %1$s AND starts_with(w.chat_key, e.workspace || ':')
                                AND right(w.chat_key, length(?)) = ?)
                    OR EXISTS (SELECT 1 FROM work_staged s WHERE s.source_id = e.id AND s.kind NOT IN %1$s AND starts_with(s.chat_key, e.workspace || ':')
                                AND right(s.chat_key, length(?)) = ?)
                    OR right(e.chat_key, length(?)) = ?""".formatted(OTHER_KINDS);
            String suffix = ":" + p.get(2) + ":" + p.get(3);
            String sql = "SELECT e.id FROM webhook_event e WHERE e.channel = ? AND e.workspace = ? AND e.account_id = ? AND ("
                    + (sender ? "e.payload #>> '{data,sender,id}' = ?" : "e.payload #>> '{data,conversation,id}' = ? OR " + byChatKey)
                    + ") FOR UPDATE";
            events = sender ? ids(c, sql, p.get(0), p.get(1), p.get(2), p.get(3))
                    : ids(c, sql, p.get(0), p.get(1), p.get(2), p.get(3), suffix, suffix, suffix, suffix, suffix, suffix);
            messages = sender
                    ? ids(c, """
                    SELECT m.id FROM channel_message m JOIN webhook_event e ON e.workspace = m.workspace AND e.event_id = m.first_event_id
                     WHERE e.id = ANY (?) FOR UPDATE OF m""", events)
                    : ids(c, """
                    SELECT m.id FROM channel_message m WHERE m.workspace = ? AND m.account_id = ? AND m.conversation_id = ?
                       AND (m.provider = ? OR EXISTS (SELECT 1 FROM webhook_event e WHERE e.channel = ? AND e.workspace = m.workspace
                                                         AND e.event_id = m.first_event_id)) FOR UPDATE OF m""",
                    p.get(1), p.get(2), p.get(3), p.get(0), p.get(0));
            staged = ids(c, "SELECT id FROM work_staged WHERE source_id = ANY (?) AND kind NOT IN " + OTHER_KINDS + " FOR UPDATE", events);
        }
        List<Long> attachments = ids(c, "SELECT id FROM message_attachment WHERE channel_message_id = ANY (?) FOR UPDATE", messages);
        List<Long> items = ids(c, """
                SELECT w.id FROM work_item w
                 WHERE (w.kind = 'telegram-update' AND w.source_id = ANY (?)) OR (w.kind NOT IN %s AND w.source_id = ANY (?))
                    OR (w.kind = 'album-child' AND w.source_id = ANY (?)) OR (w.kind = 'attachment' AND w.source_id = ANY (?))
                    OR (w.kind = 'album-decision' AND w.source_id IN (
                          SELECT d.id FROM album_decision d JOIN album a ON a.album_key = d.album_key
                           WHERE (a.workspace, a.provider, a.account_id, a.conversation_id) IN (
                                 SELECT workspace, provider, account_id, conversation_id FROM channel_message WHERE id = ANY (?))))
                 ORDER BY w.id""".formatted(OTHER_KINDS), updates, events, messages, attachments, messages);
        List<String> effects = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT effect_key FROM outbound_effect WHERE work_item_id = ANY (?) FOR UPDATE")) {
            ps.setArray(1, c.createArrayOf("bigint", items.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    effects.add(rs.getString(1));
                }
            }
        }
        return new Found(updates, events, messages, attachments, items, effects, staged);
    }

    /** A bot by its name (as in telegram.bots) or its numeric id. */
    private static String botId(Connection c, String bot) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT bot_id FROM telegram_checkpoint WHERE bot_name = ?")) {
            ps.setString(1, bot);
            try (ResultSet rs = ps.executeQuery()) {
                if (rs.next()) {
                    return Long.toString(rs.getLong(1));
                }
            }
        }
        if (!bot.matches("\\d+")) {
            throw new ConfigurationException("no bot named '" + bot + "' has polled this database; give its name or numeric id");
        }
        return bot;
    }

    private static long deleteStaged(Connection c, List<Long> ids) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("DELETE FROM work_staged WHERE id = ANY (?)")) {
            ps.setArray(1, c.createArrayOf("bigint", ids.toArray()));
            return ps.executeUpdate();
        }
    }

    /** Events not derived yet: their content is gone, so nothing is derived from them (no child, no work item). */
    private static long endUnderived(Connection c, List<Long> events) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("UPDATE webhook_event SET derived_at = now() WHERE id = ANY (?) AND derived_at IS NULL")) {
            ps.setArray(1, c.createArrayOf("bigint", events.toArray()));
            return ps.executeUpdate();
        }
    }

    private static void recordErasure(Connection c, Target t, Counts counts, String by) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO erasure (erased_by, subject, key, counts) VALUES (?, ?, ?, ?::jsonb)")) {
            ps.setString(1, by);
            ps.setString(2, t.subject());
            ps.setString(3, t.key());
            ps.setString(4, counts.json());
            ps.executeUpdate();
        }
    }

    /** Ids the query returns; parameters are text, or lists of ids (bigint arrays). */
    private static List<Long> ids(Connection c, String sql, Object... params) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < params.length; i++) {
                if (params[i] instanceof List<?> list) {
                    ps.setArray(i + 1, c.createArrayOf("bigint", list.toArray()));
                } else {
                    ps.setString(i + 1, (String) params[i]);
                }
            }
            List<Long> ids = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    ids.add(rs.getLong(1));
                }
            }
            return ids;
        }
    }
}
