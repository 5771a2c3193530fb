package io.chatintake.channel.webhook;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.chatintake.message.ChannelMessage;
import java.time.Instant;

/**
 * An event's child message as the channel's route mapped it, kept in the event's row
 * ({@code webhook_event.child}) from intake until the event is derived: the deriver upserts it
 * without mapping the event again, in any process, with or without the channel's route. JSON
 * text, not jsonb: a string jsonb refuses (a NUL escape) is still a string here.
 */
record MappedChild(ChannelMessage message, ChannelMessage.Change change) {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** The child of an event as stored, or null when the event names no message. */
    static String json(WebhookEvent event) {
        ChannelMessage m = event.message();
        if (m == null) {
            return null;
        }
        ObjectNode node = JSON.createObjectNode();
        node.put("change", event.change().name());
        node.put("provider", m.provider());
        node.put("account_id", m.accountId());
        node.put("conversation_id", m.conversationId());
        node.put("message_id", m.messageId());
        node.put("message_type", m.messageType());
        node.put("text", m.text());
        node.put("caption", m.caption());
        node.put("attachments", m.attachmentsJson());
        node.put("sent_at", m.sentAt() == null ? null : m.sentAt().toString());
        node.put("album_id", m.albumId());
        node.put("album_index", m.albumIndex());
        node.put("album_total", m.albumTotal());
        try {
            return JSON.writeValueAsString(node);
        } catch (JsonProcessingException e) {
            // Without the cause: its message can quote the content.
            throw new IllegalStateException("a mapped child message did not serialize");
        }
    }

    /** The child stored by {@link #json}. */
    static MappedChild parse(String json) {
        try {
            JsonNode node = JSON.readTree(json);
            String sentAt = text(node, "sent_at");
            ChannelMessage message = new ChannelMessage(text(node, "provider"), text(node, "account_id"), text(node, "conversation_id"),
                    text(node, "message_id"), text(node, "message_type"), text(node, "text"), text(node, "caption"),
                    text(node, "attachments"), sentAt == null ? null : Instant.parse(sentAt), text(node, "album_id"),
                    number(node, "album_index"), number(node, "album_total"));
            return new MappedChild(message, ChannelMessage.Change.valueOf(node.get("change").asText()));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a stored child message does not parse");
        }
    }

    private static String text(JsonNode node, String field) {
        JsonNode value = node.get(field);
        return value == null || value.isNull() ? null : value.asText();
    }

    private static Integer number(JsonNode node, String field) {
        JsonNode value = node.get(field);
        return value == null || value.isNull() ? null : value.asInt();
    }
}
