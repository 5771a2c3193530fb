package io.chatintake.ops;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import io.chatintake.channel.telegram.TelegramUpdateStore;
import io.chatintake.support.Redactor;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * What became of one stored message ({@link MessageSearch.Key}): when and by which process it was
 * stored, its album and that album's decisions, every run of its work, its effects (the replies
 * sent among them) and its payload with secret fields masked. Queries only; {@link MessagesView}
 * and {@link MessagesCommand} show it.
 */
public final class MessageTimeline {
    /** Payloads are shown up to this many characters. */
    static final int PAYLOAD_CHARS = 64 * 1024;
    /** Field names whose values are secrets in the shipped channels' payloads: signed media URLs, reply and interaction tokens. */
    static final Set<String> SECRET_FIELDS = Set.of("url", "reply_token", "replyToken", "response_url", "token");
    private static final ObjectMapper JSON = new ObjectMapper();

    public record Timeline(MessageSearch.Found message, String storedBy, Instant lastReceivedAt, int deliveries, String payload,
                           Album album, List<Decision> decisions, List<Item> items, List<Run> runs, List<Effect> effects) {
    }

    public record Album(String albumKey, String albumId, Instant firstChildAt, Instant lastChildAt, int decidedVersion,
                        boolean needsPerson) {
    }

    public record Decision(int version, String kind, int children, String completedBy, Instant decidedAt) {
    }

    public record Item(long id, String kind, String state, int attempts, String lastError, Instant createdAt, Instant doneAt) {
    }

    /** One run of an item: {@code line} is its failure, or its outcome (undeliverable), or null when done. */
    public record Run(long itemId, int attempt, String state, String line, String process, Instant claimedAt, Instant finishedAt) {
        public Duration duration() {
            return claimedAt == null ? null : Duration.between(claimedAt, finishedAt);
        }
    }

    public record Effect(String key, long itemId, String state, Instant startedAt, Instant doneAt, String result, String resolvedBy) {
    }

    private MessageTimeline() {
    }

    public static Optional<Timeline> of(Connection c, MessageSearch.Key key) throws SQLException {
        Optional<Stored> stored = key.telegram() ? telegram(c, key.id()) : webhook(c, key.id());
        if (stored.isEmpty()) {
            return Optional.empty();
        }
        Stored s = stored.get();
        List<Item> items = items(c, key, s);
        List<Long> ids = items.stream().map(Item::id).toList();
        Optional<Album> album = album(c, s);
        return Optional.of(new Timeline(s.found, s.storedBy, s.lastReceivedAt, s.deliveries, mask(s.payload), album.orElse(null),
                album.isEmpty() ? List.of() : decisions(c, album.get().albumKey()), items, runs(c, ids), effects(c, ids)));
    }

    /** The row as stored, and how its work item and child message are found. */
    private record Stored(MessageSearch.Found found, String storedBy, Instant lastReceivedAt, int deliveries, String payload,
                          String workspace, String childEvent, String sourceKey) {
    }

    private static Optional<Stored> telegram(Connection c, long id) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("""
                SELECT u.id, COALESCE(k.bot_name, 'bot ' || u.bot_id), telegram_chat_id(u.payload), telegram_sender_id(u.payload),
                       u.update_id::text, u.update_type, telegram_text(u.payload), u.received_at, u.stored_by,
                       COALESCE(u.payload::text, u.raw_payload), 'telegram:' || u.bot_id || ':' || u.update_id
                  FROM telegram_update u LEFT JOIN telegram_checkpoint k ON k.bot_id = u.bot_id WHERE u.id = ?""")) {
            ps.setLong(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return Optional.empty();
                }
                Instant at = rs.getTimestamp(8).toInstant();
                return Optional.of(new Stored(new MessageSearch.Found("telegram-" + id, "telegram", rs.getString(2), rs.getString(3),
                        rs.getString(4), rs.getString(5), rs.getString(6), rs.getString(7), at), rs.getString(9), at, 1, rs.getString(10),
                        TelegramUpdateStore.WORKSPACE, rs.getString(11), null));
            }
        }
    }

    private static Optional<Stored> webhook(Connection c, long id) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("""
                SELECT e.id, e.channel, e.workspace, m.conversation_id, webhook_sender_id(e.payload), e.event_id, e.event_type,
                       COALESCE(m.text, m.caption), e.received_at, e.stored_by, e.last_received_at, e.delivery_count, e.body
                  FROM webhook_event e LEFT JOIN channel_message m ON m.first_event_id = e.event_id AND m.workspace = e.workspace
                 WHERE e.id = ?""")) {
            ps.setLong(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return Optional.empty();
                }
                String workspace = rs.getString(3);
                String eventId = rs.getString(6);
                return Optional.of(new Stored(new MessageSearch.Found("webhook-" + id, rs.getString(2), workspace, rs.getString(4),
                        rs.getString(5), eventId, rs.getString(7), rs.getString(8), rs.getTimestamp(9).toInstant()), rs.getString(10),
                        rs.getTimestamp(11).toInstant(), rs.getInt(12), new String(rs.getBytes(13), StandardCharsets.UTF_8), workspace,
                        eventId, workspace + ":" + rs.getString(2) + ":" + eventId));
            }
        }
    }

    private static List<Item> items(Connection c, MessageSearch.Key key, Stored s) throws SQLException {
        // Work of the message's own row: telegram-update by its id; a webhook event's by its source key (kinds differ per channel).
        String sql = "SELECT id, kind, state, attempts, last_error, created_at, done_at FROM work_item WHERE source_id = ? AND "
                + (key.telegram() ? "kind = 'telegram-update'" : "source_key = ?") + " ORDER BY id";
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setLong(1, key.id());
            if (!key.telegram()) {
                ps.setString(2, s.sourceKey);
            }
            List<Item> items = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    items.add(new Item(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getInt(4), Redactor.redact(rs.getString(5)),
                            instant(rs.getTimestamp(6)), instant(rs.getTimestamp(7))));
                }
            }
            return items;
        }
    }

    private static List<Run> runs(Connection c, List<Long> items) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("""
                SELECT work_item_id, attempt, state, COALESCE(error, outcome), process, claimed_at, finished_at
                  FROM work_run WHERE work_item_id = ANY (?::bigint[]) ORDER BY work_item_id, id""")) {
            ps.setArray(1, c.createArrayOf("bigint", items.toArray()));
            List<Run> runs = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    runs.add(new Run(rs.getLong(1), rs.getInt(2), rs.getString(3), Redactor.redact(rs.getString(4)), rs.getString(5),
                            instant(rs.getTimestamp(6)), instant(rs.getTimestamp(7))));
                }
            }
            return runs;
        }
    }

    private static List<Effect> effects(Connection c, List<Long> items) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("""
                SELECT effect_key, work_item_id, state, started_at, done_at, left(result, 2000), resolved_by
                  FROM outbound_effect WHERE work_item_id = ANY (?::bigint[]) ORDER BY started_at, effect_key""")) {
            ps.setArray(1, c.createArrayOf("bigint", items.toArray()));
            List<Effect> effects = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    effects.add(new Effect(rs.getString(1), rs.getLong(2), rs.getString(3), instant(rs.getTimestamp(4)),
                            instant(rs.getTimestamp(5)), mask(rs.getString(6)), rs.getString(7)));
                }
            }
            return effects;
        }
    }

    private static Optional<Album> album(Connection c, Stored s) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("""
                SELECT a.album_key, a.album_id, a.first_child_at, a.last_child_at, a.decided_version, a.needs_person
                  FROM channel_message m JOIN album a ON a.workspace = m.workspace AND a.provider = m.provider
                       AND a.account_id = m.account_id AND a.conversation_id = m.conversation_id AND a.album_id = m.album_id
                 WHERE m.first_event_id = ? AND m.workspace = ? LIMIT 1""")) {
            ps.setString(1, s.childEvent);
            ps.setString(2, s.workspace);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(new Album(rs.getString(1), rs.getString(2), instant(rs.getTimestamp(3)),
                        instant(rs.getTimestamp(4)), rs.getInt(5), rs.getBoolean(6))) : Optional.empty();
            }
        }
    }

    private static List<Decision> decisions(Connection c, String albumKey) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("""
                SELECT version, kind, jsonb_array_length(child_ids), completed_by, decided_at
                  FROM album_decision WHERE album_key = ? ORDER BY version""")) {
            ps.setString(1, albumKey);
            List<Decision> decisions = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    decisions.add(new Decision(rs.getInt(1), rs.getString(2), rs.getInt(3), rs.getString(4), instant(rs.getTimestamp(5))));
                }
            }
            return decisions;
        }
    }

    /**
     * The text with every secret masked: values of {@link #SECRET_FIELDS} in JSON, then whatever the
     * {@link Redactor} knows (configured secrets, the events' registered ones); cut to {@link #PAYLOAD_CHARS}.
     */
    static String mask(String text) {
        if (text == null) {
            return null;
        }
        String masked = text;
        try {
            JsonNode tree = JSON.readTree(text);
            if (tree != null && tree.isContainerNode()) {
                maskFields(tree);
                masked = JSON.writerWithDefaultPrettyPrinter().writeValueAsString(tree);
            }
        } catch (IOException e) {
            // Not JSON (a raw body): only the Redactor's values are masked.
        }
        return Redactor.redact(masked, PAYLOAD_CHARS);
    }

    private static void maskFields(JsonNode node) {
        if (node instanceof ObjectNode object) {
            for (Iterator<Map.Entry<String, JsonNode>> it = object.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> field = it.next();
                if (SECRET_FIELDS.contains(field.getKey()) && field.getValue().isValueNode() && !field.getValue().isNull()) {
                    field.setValue(TextNode.valueOf(Redactor.MASK));
                } else {
                    maskFields(field.getValue());
                }
            }
        } else if (node instanceof ArrayNode array) {
            array.forEach(MessageTimeline::maskFields);
        }
    }

    private static Instant instant(Timestamp t) {
        return t == null ? null : t.toInstant();
    }
}
