package io.chatintake.channel.telegram;

import org.apache.camel.spi.UriParam;
import org.apache.camel.spi.UriParams;

/** What {@code telegram-bot} calls: the Bot API method, the chat, and how long it waits for the answer. */
@UriParams
public class TelegramBotConfiguration {
    @UriParam(label = "producer", defaultValue = TelegramBotEndpoint.SEND_MESSAGE,
            description = "Bot API method; other than sendMessage, the body is its JSON parameters")
    private String method = TelegramBotEndpoint.SEND_MESSAGE;
    @UriParam(label = "producer", description = "Chat to send to (default: the ChatIntakeTelegramChatId header, or the former TelegramChatId)")
    private String chatId;
    @UriParam(label = "producer", defaultValue = "30", description = "Longest wait for the Bot API's answer, in seconds")
    private int timeoutSeconds = 30;

    public String getMethod() {
        return method;
    }

    public void setMethod(String method) {
        this.method = method;
    }

    public String getChatId() {
        return chatId;
    }

    public void setChatId(String chatId) {
        this.chatId = chatId;
    }

    public int getTimeoutSeconds() {
        return timeoutSeconds;
    }

    public void setTimeoutSeconds(int timeoutSeconds) {
        this.timeoutSeconds = timeoutSeconds;
    }
}
