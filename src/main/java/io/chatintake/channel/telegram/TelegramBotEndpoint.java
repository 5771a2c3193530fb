package io.chatintake.channel.telegram;

import java.util.Optional;
import org.apache.camel.Category;
import org.apache.camel.Consumer;
import org.apache.camel.Processor;
import org.apache.camel.Producer;
import org.apache.camel.spi.UriEndpoint;
import org.apache.camel.spi.UriParam;

/**
 * One bot's Bot API calls. {@code method=sendMessage} (the default) sends the body as text to
 * the chat in the {@code ChatIntakeTelegramChatId} header (or {@code chatId}); any other method takes its
 * parameters as a JSON body. The body afterwards is the Bot API result: the message id for
 * sendMessage, the result JSON otherwise.
 */
@UriEndpoint(firstVersion = "0.1.0", scheme = "telegram-bot", title = "Telegram Bot (replies)",
        syntax = "telegram-bot:botName", producerOnly = true, category = {Category.CHAT},
        headersClass = TelegramBotConstants.class)
public class TelegramBotEndpoint extends ConfiguredBotEndpoint {
    static final String SEND_MESSAGE = "sendMessage";

    @UriParam
    private TelegramBotConfiguration configuration = new TelegramBotConfiguration();

    public TelegramBotEndpoint(String uri, TelegramBotComponent component, String botName) {
        super(uri, component, botName);
    }

    @Override
    public TelegramBotComponent getComponent() {
        return (TelegramBotComponent) super.getComponent();
    }

    @Override
    public Producer createProducer() {
        return new TelegramBotProducer(this);
    }

    @Override
    public Consumer createConsumer(Processor processor) {
        throw new UnsupportedOperationException("telegram-bot only sends; receive with telegram-inbox:" + getBotName());
    }

    Optional<TelegramBotComponent.Sender> sender() {
        return getComponent().sender(getBotName(), resolveToken(), resolveApiUrl());
    }

    String getMethod() {
        return configuration.getMethod();
    }

    String getChatId() {
        return configuration.getChatId();
    }

    int getTimeoutSeconds() {
        return configuration.getTimeoutSeconds();
    }

    public TelegramBotConfiguration getConfiguration() {
        return configuration;
    }

    public void setConfiguration(TelegramBotConfiguration configuration) {
        this.configuration = configuration;
    }
}
