package io.chatintake.channel.telegram;

import io.chatintake.channel.telegram.TelegramInboxConsumerHealthCheck.Phase;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Another process took the poll lease over (ours expired): stop polling, stand by for it at once. */
final class OnLeaseLost implements PollFailurePolicy {
    private static final Logger LOG = LoggerFactory.getLogger(OnLeaseLost.class);

    @Override
    public Duration handle(Exception failure, BotPoller poller) {
        LOG.warn("telegram bot '{}': {}; polling stops here and waits for the lease", poller.bot(), failure.getMessage());
        poller.health().enter(Phase.STANDBY, "the poll lease was taken over by another process");
        poller.leaseLost();
        return Duration.ZERO;
    }
}
