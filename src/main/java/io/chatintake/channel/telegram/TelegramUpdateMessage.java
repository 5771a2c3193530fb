package io.chatintake.channel.telegram;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.chatintake.support.FormerHeaderNames;
import java.util.Optional;
import org.apache.camel.Message;

/** What a handler route receives for a stored update, whether from intake's fast path or the dispatcher. */
final class TelegramUpdateMessage {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String[] TEXT_PATHS = {"/message/text", "/message/caption", "/edited_message/text",
        "/channel_post/text", "/business_message/text"};

    private TelegramUpdateMessage() {
    }

    /** @param rawReason null, or why jsonb refused the update: the body is then the text as Telegram sent it */
    static void fill(Message message, String botName, long botId, long updateId, String type, long rowId, String json,
                     String rawReason) {
        message.setBody(json);
        if (rawReason != null) {
            message.setHeader(TelegramInboxConstants.RAW_REASON, rawReason);
        }
        message.setHeader(TelegramInboxConstants.BOT_NAME, botName);
        message.setHeader(TelegramInboxConstants.BOT_ID, botId);
        message.setHeader(TelegramInboxConstants.UPDATE_ID, updateId);
        message.setHeader(TelegramInboxConstants.UPDATE_TYPE, type);
        message.setHeader(TelegramInboxConstants.STORED_ID, rowId);
        JsonNode update = parse(json);
        UpdateChat.idOf(update).ifPresent(chat -> message.setHeader(TelegramInboxConstants.CHAT_ID, chat));
        first(update, TEXT_PATHS).ifPresent(text -> message.setHeader(TelegramInboxConstants.TEXT, text));
        FormerHeaderNames.copy(message, TelegramInboxConstants.FORMER_NAMES);
    }

    private static JsonNode parse(String json) {
        try {
            return JSON.readTree(json);
        } catch (Exception e) {
            return JSON.missingNode(); // not JSON we can read: the handler still gets the raw body
        }
    }

    private static Optional<String> first(JsonNode update, String[] paths) {
        for (String path : paths) {
            JsonNode value = update.at(path);
            if (value.isValueNode()) {
                return Optional.of(value.asText());
            }
        }
        return Optional.empty();
    }
}
