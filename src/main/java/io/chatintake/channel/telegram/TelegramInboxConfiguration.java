package io.chatintake.channel.telegram;

import org.apache.camel.spi.Metadata;
import org.apache.camel.spi.UriParam;
import org.apache.camel.spi.UriParams;

/** How {@code telegram-inbox} polls: batch size, long-poll timeout, update types, lease and back-off. */
@UriParams
public class TelegramInboxConfiguration {
    @UriParam(label = "consumer", defaultValue = "100", description = "Updates per getUpdates call (1..100)")
    private int limit = 100;
    @UriParam(label = "consumer", defaultValue = "25", description = "Long-poll timeout in seconds (0..50)")
    private int timeoutSeconds = 25;
    @Deprecated
    @UriParam(label = "consumer,advanced", description = "The earlier name of timeoutSeconds, still accepted")
    @Metadata(deprecationNote = "use timeoutSeconds")
    private Integer timeout;
    @UriParam(label = "consumer", description = "Comma-separated update types to ask for (default: configuration key"
            + " telegram.allowed-updates, else every type, since Telegram keeps an earlier setting when none is sent)")
    private String allowedUpdates;
    @UriParam(label = "consumer,advanced", defaultValue = "60", description = "Poll lease duration in seconds; must exceed the long-poll timeout")
    private int leaseSeconds = 60;
    @UriParam(label = "consumer,advanced", defaultValue = "1000", description = "First wait after a failure, in milliseconds")
    private long backoffBaseMillis = 1000;
    @UriParam(label = "consumer,advanced", defaultValue = "60000", description = "Longest wait after repeated failures, in milliseconds")
    private long backoffCapMillis = 60_000;

    public int getLimit() {
        return limit;
    }

    public void setLimit(int limit) {
        this.limit = limit;
    }

    public int getTimeoutSeconds() {
        return timeoutSeconds;
    }

    public void setTimeoutSeconds(int timeoutSeconds) {
        this.timeoutSeconds = timeoutSeconds;
    }

    @Deprecated
    public Integer getTimeout() {
        return timeout;
    }

    @Deprecated
    public void setTimeout(Integer timeout) {
        this.timeout = timeout;
        this.timeoutSeconds = timeout;
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
