package io.chatintake.channel.telegram;

import java.time.Duration;
import java.util.List;
import org.apache.camel.Category;
import org.apache.camel.Consumer;
import org.apache.camel.Processor;
import org.apache.camel.Producer;
import org.apache.camel.spi.UriEndpoint;
import org.apache.camel.spi.UriParam;

/** One bot's durable long polling; the bot, its token and server as {@link ConfiguredBotEndpoint} resolves them. */
@UriEndpoint(firstVersion = "0.1.0", scheme = "telegram-inbox", title = "Telegram Inbox",
        syntax = "telegram-inbox:botName", consumerOnly = true, category = {Category.CHAT},
        headersClass = TelegramInboxConstants.class)
public class TelegramInboxEndpoint extends ConfiguredBotEndpoint {
    @UriParam
    private TelegramInboxConfiguration configuration = new TelegramInboxConfiguration();

    public TelegramInboxEndpoint(String uri, TelegramInboxComponent component, String botName) {
        super(uri, component, botName);
    }

    @Override
    public TelegramInboxComponent getComponent() {
        return (TelegramInboxComponent) super.getComponent();
    }

    @Override
    public Producer createProducer() {
        throw new UnsupportedOperationException("telegram-inbox only consumes; reply with telegram-bot:" + getBotName());
    }

    @Override
    public Consumer createConsumer(Processor processor) throws Exception {
        int limit = getLimit();
        int timeout = getTimeoutSeconds();
        int leaseSeconds = configuration.getLeaseSeconds();
        if (limit < 1 || limit > 100) {
            throw new IllegalArgumentException("telegram-inbox:" + getBotName() + " limit must be 1..100, got " + limit);
        }
        if (timeout < 0 || timeout > 50) {
            throw new IllegalArgumentException("telegram-inbox:" + getBotName() + " timeoutSeconds must be 0..50, got " + timeout);
        }
        if (leaseSeconds <= timeout + 5) {
            throw new IllegalArgumentException("telegram-inbox:" + getBotName() + " leaseSeconds (" + leaseSeconds
                    + ") must exceed the long-poll timeout (" + timeout + ") by more than 5 s");
        }
        TelegramInboxConsumer consumer = new TelegramInboxConsumer(this, processor);
        configureConsumer(consumer);
        return consumer;
    }

    /** Never empty: an empty allowed_updates would keep whatever was set for the bot before. */
    List<String> allowedUpdateList() {
        String allowedUpdates = configuration.getAllowedUpdates();
        if (allowedUpdates != null && !allowedUpdates.isBlank()) {
            return AllowedUpdates.parse(allowedUpdates);
        }
        return AllowedUpdates.parse(property(AllowedUpdates.KEY).orElse(null));
    }

    Duration leaseDuration() {
        return Duration.ofSeconds(configuration.getLeaseSeconds());
    }

    int getLimit() {
        return configuration.getLimit();
    }

    int getTimeoutSeconds() {
        return configuration.getTimeoutSeconds();
    }

    long getBackoffBaseMillis() {
        return configuration.getBackoffBaseMillis();
    }

    long getBackoffCapMillis() {
        return configuration.getBackoffCapMillis();
    }

    public TelegramInboxConfiguration getConfiguration() {
        return configuration;
    }

    public void setConfiguration(TelegramInboxConfiguration configuration) {
        this.configuration = configuration;
    }
}
