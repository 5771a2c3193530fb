package io.chatintake.telegram;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.camel.Message;

/** What a handler route receives for a stored update, whether from intake's fast path or the dispatcher. */
final class TelegramUpdateMessage {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String[] CHAT_PATHS = {"/message/chat/id", "/edited_message/chat/id", "/channel_post/chat/id",
        "/edited_channel_post/chat/id", "/business_message/chat/id", "/callback_query/message/chat/id"};

    private TelegramUpdateMessage() {
    }

    static void fill(Message message, String botName, long botId, long updateId, String type, long rowId, String json) {
        message.setBody(json);
        message.setHeader(TelegramInboxConsumer.BOT_NAME, botName);
        message.setHeader(TelegramInboxConsumer.BOT_ID, botId);
        message.setHeader(TelegramInboxConsumer.UPDATE_ID, updateId);
        message.setHeader(TelegramInboxConsumer.UPDATE_TYPE, type);
        message.setHeader(TelegramInboxConsumer.INBOX_ROW_ID, rowId);
        chatId(json).ifPresent(chat -> message.setHeader(TelegramInboxConsumer.CHAT_ID, chat));
    }

    /** Also {@code CamelTelegramChatId}'s value, so a reply through camel-telegram needs no parsing in YAML. */
    private static java.util.Optional<String> chatId(String json) {
        try {
            JsonNode update = JSON.readTree(json);
            for (String path : CHAT_PATHS) {
                JsonNode id = update.at(path);
                if (!id.isMissingNode()) {
                    return java.util.Optional.of(id.asText());
                }
            }
        } catch (Exception e) {
            // not JSON we can read: the handler still gets the raw body
        }
        return java.util.Optional.empty();
    }
}
