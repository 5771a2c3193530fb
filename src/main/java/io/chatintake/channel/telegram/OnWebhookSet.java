package io.chatintake.channel.telegram;

import io.chatintake.channel.telegram.TelegramInboxConsumerHealthCheck.Phase;
import java.time.Duration;
import java.time.Instant;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A webhook is set, so Telegram refuses getUpdates: no polling, the lease released, checked again
 * every minute; the log says how to switch (at most every 5 minutes).
 */
final class OnWebhookSet implements PollFailurePolicy {
    private static final Logger LOG = LoggerFactory.getLogger(OnWebhookSet.class);
    private static final Duration RECHECK = Duration.ofMinutes(1);
    private static final Duration LOG_EVERY = Duration.ofMinutes(5);

    private Instant lastLog = Instant.EPOCH;

    @Override
    public Duration handle(Exception failure, BotPoller poller) {
        poller.metrics().error(TelegramMetrics.PollError.WEBHOOK_SET);
        poller.health().enter(Phase.WEBHOOK_SET, "to poll, run: java -jar chat-intake.jar telegram switch-to-polling --bot " + poller.bot());
        if (Duration.between(lastLog, Instant.now()).compareTo(LOG_EVERY) >= 0) {
            LOG.error("telegram bot '{}': a webhook is set, so Telegram refuses getUpdates; not polling. To switch"
                    + " this bot to polling without losing queued updates run: java -jar chat-intake.jar telegram"
                    + " switch-to-polling --bot {}", poller.bot(), poller.bot());
            lastLog = Instant.now();
        }
        poller.releaseLease();
        return RECHECK;
    }
}
