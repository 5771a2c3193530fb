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
        syntax = "telegram-inbox:botName", consumerOnly = true, category = {Category.CHAT})
public class TelegramInboxEndpoint extends ConfiguredBotEndpoint {
    @UriParam(defaultValue = "100", description = "Updates per getUpdates call (1..100)")
    private int limit = 100;
    @UriParam(defaultValue = "25", description = "Long-poll timeout in seconds (0..50)")
    private int timeout = 25;
    @UriParam(description = "Comma-separated update types to ask for (default: configuration key telegram.allowed-updates,"
            + " else every type, since Telegram keeps an earlier setting when none is sent)")
    private String allowedUpdates;
    @UriParam(defaultValue = "60", description = "Poll lease duration in seconds; must exceed the long-poll timeout")
    private int leaseSeconds = 60;
    @UriParam(defaultValue = "1000", description = "First wait after a failure, in milliseconds")
    private long backoffBaseMillis = 1000;
    @UriParam(defaultValue = "60000", description = "Longest wait after repeated failures, in milliseconds")
    private long backoffCapMillis = 60_000;

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
        if (limit < 1 || limit > 100) {
            throw new IllegalArgumentException("telegram-inbox:" + getBotName() + " limit must be 1..100, got " + limit);
        }
        if (timeout < 0 || timeout > 50) {
            throw new IllegalArgumentException("telegram-inbox:" + getBotName() + " timeout must be 0..50 seconds, got " + timeout);
        }
        if (leaseSeconds <= timeout + 5) {
            throw new IllegalArgumentException("telegram-inbox:" + getBotName() + " leaseSeconds (" + leaseSeconds
                    + ") must exceed the long-poll timeout (" + timeout + ") by more than 5 s");
        }
        TelegramInboxConsumer consumer = new TelegramInboxConsumer(this, processor);
        configureConsumer(consumer);
        return consumer;
    }

    /** The configuration key the token is read from, named in the "polling is off" message. */
    /** Never empty: an empty allowed_updates would keep whatever was set for the bot before. */
    List<String> allowedUpdateList() {
        if (allowedUpdates != null && !allowedUpdates.isBlank()) {
            return AllowedUpdates.parse(allowedUpdates);
        }
        return AllowedUpdates.parse(property(AllowedUpdates.KEY).orElse(null));
    }

    Duration leaseDuration() {
        return Duration.ofSeconds(leaseSeconds);
    }

    public int getLimit() {
        return limit;
    }

    public void setLimit(int limit) {
        this.limit = limit;
    }

    public int getTimeout() {
        return timeout;
    }

    public void setTimeout(int timeout) {
        this.timeout = timeout;
    }

    public String getAllowedUpdates() {
        return allowedUpdates;
    }

    public void setAllowedUpdates(String allowedUpdates) {
        this.allowedUpdates = allowedUpdates;
    }

    public int getLeaseSeconds() {
        return leaseSeconds;
    }

    public void setLeaseSeconds(int leaseSeconds) {
        this.leaseSeconds = leaseSeconds;
    }

    public long getBackoffBaseMillis() {
        return backoffBaseMillis;
    }

    public void setBackoffBaseMillis(long backoffBaseMillis) {
        this.backoffBaseMillis = backoffBaseMillis;
    }

    public long getBackoffCapMillis() {
        return backoffCapMillis;
    }

    public void setBackoffCapMillis(long backoffCapMillis) {
        this.backoffCapMillis = backoffCapMillis;
    }
}
