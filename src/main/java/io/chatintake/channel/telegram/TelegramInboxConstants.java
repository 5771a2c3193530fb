package io.chatintake.channel.telegram;

import java.util.Map;
import org.apache.camel.spi.Metadata;

/**
 * The headers {@code telegram-inbox} puts on each update it hands to its route (and on the
 * telegram-update work). Every Telegram header starts with {@code ChatIntakeTelegram}; each is also
 * set under its former name (see {@link #FORMER_NAMES}).
 */
public final class TelegramInboxConstants {
    @Metadata(label = "consumer", description = "Name of the bot in this configuration (formerly TelegramBotName)", javaType = "String")
    public static final String BOT_NAME = "ChatIntakeTelegramBotName";
    @Metadata(label = "consumer", description = "Telegram's id of the bot (formerly TelegramBotId)", javaType = "long")
    public static final String BOT_ID = "ChatIntakeTelegramBotId";
    @Metadata(label = "consumer", description = "The update's update_id (formerly TelegramUpdateId)", javaType = "long")
    public static final String UPDATE_ID = "ChatIntakeTelegramUpdateId";
    @Metadata(label = "consumer", description = "The update's type: message, edited_message, callback_query, ..."
            + " (formerly TelegramUpdateType)", javaType = "String")
    public static final String UPDATE_TYPE = "ChatIntakeTelegramUpdateType";
    @Metadata(label = "consumer", description = "Row id of the update in telegram_update (formerly TelegramInboxRowId)", javaType = "long")
    public static final String STORED_ID = "ChatIntakeTelegramStoredId";
    /** Also where {@code telegram-bot} sends. */
    @Metadata(label = "consumer", description = "The chat the update belongs to, when it has one (formerly TelegramChatId)",
            javaType = "String")
    public static final String CHAT_ID = "ChatIntakeTelegramChatId";
    @Metadata(label = "consumer", description = "The message's text or caption, when it has one (formerly TelegramText)",
            javaType = "String")
    public static final String TEXT = "ChatIntakeTelegramText";
    @Metadata(label = "consumer", description = "Set only on an update PostgreSQL's jsonb refused: why (nul_character,"
            + " lone_surrogate, ...); the body is then its raw text (formerly TelegramRawReason)", javaType = "String")
    public static final String RAW_REASON = "ChatIntakeTelegramRawReason";

    /** Each header's name before the one-prefix rename, still set beside it for routes that read it. */
    public static final Map<String, String> FORMER_NAMES = Map.of(
            BOT_NAME, "TelegramBotName",
            BOT_ID, "TelegramBotId",
            UPDATE_ID, "TelegramUpdateId",
            UPDATE_TYPE, "TelegramUpdateType",
            STORED_ID, "TelegramInboxRowId",
            CHAT_ID, "TelegramChatId",
            TEXT, "TelegramText",
            RAW_REASON, "TelegramRawReason");

    private TelegramInboxConstants() {
    }
}
