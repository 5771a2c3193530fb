package io.chatintake.channel.telegram;

import io.chatintake.channel.telegram.TelegramInboxConsumerHealthCheck.Phase;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * 409 "terminated by other getUpdates request": someone else polls this bot right now (outside
 * the lease, or a getUpdates abandoned at a stop still waiting). Back off; the next step renews
 * the lease, which tells whether it is still ours.
 */
final class OnOtherPoller implements PollFailurePolicy {
    private static final Logger LOG = LoggerFactory.getLogger(OnOtherPoller.class);

    @Override
    public Duration handle(Exception failure, BotPoller poller) {
        poller.metrics().error(TelegramMetrics.PollError.CONFLICT_409);
        poller.health().enter(Phase.BACKING_OFF, "409: another getUpdates request is running");
        Duration wait = poller.backoff();
        LOG.warn("telegram bot '{}': Telegram says another getUpdates request is running ({}); re-checking the lease in {} ms",
                poller.bot(), failure.getMessage(), wait.toMillis());
        return wait;
    }
}
