package io.chatintake.channel.telegram;

import java.util.Map;
import org.apache.camel.spi.Metadata;

/** The headers {@code telegram-bot} reads and sets: the {@code ChatIntakeTelegram} prefix, as telegram-inbox's. */
public final class TelegramBotConstants {
    @Metadata(label = "producer", description = "Chat to send to, unless the endpoint names one (chatId); the former name"
            + " TelegramChatId is read too", javaType = "String")
    public static final String CHAT_ID = TelegramInboxConstants.CHAT_ID;
    @Metadata(label = "producer", description = "After sendMessage: the sent message's id, also the body (formerly TelegramMessageId)",
            javaType = "long")
    public static final String MESSAGE_ID = "ChatIntakeTelegramMessageId";

    /** Each header's name before the one-prefix rename, still read and set beside it. */
    public static final Map<String, String> FORMER_NAMES = Map.of(
            CHAT_ID, TelegramInboxConstants.FORMER_NAMES.get(CHAT_ID),
            MESSAGE_ID, "TelegramMessageId");

    private TelegramBotConstants() {
    }
}
