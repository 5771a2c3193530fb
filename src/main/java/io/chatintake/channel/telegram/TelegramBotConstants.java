package io.chatintake.channel.telegram;

import org.apache.camel.spi.Metadata;

/** The headers {@code telegram-bot} reads and sets. */
public final class TelegramBotConstants {
    @Metadata(label = "producer", description = "Chat to send to, unless the endpoint names one (chatId)", javaType = "String")
    public static final String CHAT_ID = TelegramInboxConstants.CHAT_ID;
    @Metadata(label = "producer", description = "After sendMessage: the sent message's id (also the body)", javaType = "long")
    public static final String MESSAGE_ID = "TelegramMessageId";

    private TelegramBotConstants() {
    }
}
