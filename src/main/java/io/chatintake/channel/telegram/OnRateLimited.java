package io.chatintake.channel.telegram;

import io.chatintake.channel.telegram.TelegramInboxConsumerHealthCheck.Phase;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** 429: wait what Telegram's retry_after says (at least a second), not the poller's own backoff. */
final class OnRateLimited implements PollFailurePolicy {
    private static final Logger LOG = LoggerFactory.getLogger(OnRateLimited.class);

    @Override
    public Duration handle(Exception failure, BotPoller poller) {
        poller.metrics().error(TelegramMetrics.PollError.RATE_LIMITED_429);
        Duration wait = Duration.ofSeconds(Math.max(1, ((BotApiException) failure).retryAfterSeconds()));
        poller.health().enter(Phase.BACKING_OFF, "429: rate limited, retry after " + wait.toSeconds() + " s");
        LOG.warn("telegram bot '{}': rate limited by Telegram, waiting retry_after = {} s", poller.bot(), wait.toSeconds());
        return wait;
    }
}
