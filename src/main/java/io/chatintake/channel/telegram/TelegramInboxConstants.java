package io.chatintake.channel.telegram;

import org.apache.camel.spi.Metadata;

/** The headers {@code telegram-inbox} puts on each update it hands to its route (and on the telegram-update work). */
public final class TelegramInboxConstants {
    @Metadata(label = "consumer", description = "Name of the bot in this configuration", javaType = "String")
    public static final String BOT_NAME = "TelegramBotName";
    @Metadata(label = "consumer", description = "Telegram's id of the bot", javaType = "long")
    public static final String BOT_ID = "TelegramBotId";
    @Metadata(label = "consumer", description = "The update's update_id", javaType = "long")
    public static final String UPDATE_ID = "TelegramUpdateId";
    @Metadata(label = "consumer", description = "The update's type: message, edited_message, callback_query, ...", javaType = "String")
    public static final String UPDATE_TYPE = "TelegramUpdateType";
    @Metadata(label = "consumer", description = "Row id of the update in telegram_update", javaType = "long")
    public static final String INBOX_ROW_ID = "TelegramInboxRowId";
    /** Also where {@code telegram-bot} sends, and usable as camel-telegram's chat id. */
    @Metadata(label = "consumer", description = "The chat the update belongs to, when it has one", javaType = "String")
    public static final String CHAT_ID = "TelegramChatId";
    @Metadata(label = "consumer", description = "The message's text or caption, when it has one", javaType = "String")
    public static final String TEXT = "TelegramText";
    @Metadata(label = "consumer", description = "Set only on an update PostgreSQL's jsonb refused: why (nul_character,"
            + " lone_surrogate, ...); the body is then its raw text", javaType = "String")
    public static final String RAW_REASON = "TelegramRawReason";

    private TelegramInboxConstants() {
    }
}
