package io.chatintake.channel.telegram;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * Where each update type carries its chat: the one place that knows it. The chat orders a
 * bot's work (one chat's updates are handled in order) and is handed to handler routes.
 */
final class UpdateChat {
    /** Paths to the chat object, most common first. */
    private static final List<List<String>> CHAT = List.of(
            List.of("message", "chat"), List.of("edited_message", "chat"), List.of("channel_post", "chat"),
            List.of("edited_channel_post", "chat"), List.of("business_message", "chat"),
            List.of("edited_business_message", "chat"), List.of("callback_query", "message", "chat"),
            List.of("message_reaction", "chat"), List.of("message_reaction_count", "chat"),
            List.of("my_chat_member", "chat"), List.of("chat_member", "chat"), List.of("chat_join_request", "chat"),
            List.of("chat_boost", "chat"), List.of("removed_chat_boost", "chat"));

    private static final ObjectMapper JSON = new ObjectMapper();

    private UpdateChat() {
    }

    /** The chat id of an update given as text: for updates stored raw, which SQL cannot read. */
    static Optional<String> idOf(String json) {
        try {
            return idOf(JSON.readTree(json));
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    /** The chat id of a parsed update, if its type has a chat. */
    static Optional<String> idOf(JsonNode update) {
        for (List<String> path : CHAT) {
            JsonNode id = update.at("/" + String.join("/", path) + "/id");
            if (id.isValueNode()) {
                return Optional.of(id.asText());
            }
        }
        return Optional.empty();
    }

    /** The same as SQL over a jsonb column holding the update: the chat id as text, or NULL. */
    static String sqlIdOf(String jsonbColumn) {
        return CHAT.stream().map(path -> jsonbColumn + " #>> '{" + String.join(",", path) + ",id}'")
                .collect(Collectors.joining(", ", "COALESCE(", ")"));
    }
}
