package io.chatintake.channel.telegram;

import io.chatintake.channel.telegram.TelegramInboxConsumerHealthCheck.Phase;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** A 5xx or other error answer, or no answer at all: back off and poll again from the same offset. */
final class OnBotApiUnavailable implements PollFailurePolicy {
    private static final Logger LOG = LoggerFactory.getLogger(OnBotApiUnavailable.class);

    @Override
    public Duration handle(Exception failure, BotPoller poller) {
        boolean server = ((BotApiException) failure).kind() == BotApiException.Kind.SERVER;
        poller.metrics().error(server ? TelegramMetrics.PollError.SERVER_5XX : TelegramMetrics.PollError.NETWORK);
        poller.health().enter(Phase.BACKING_OFF, failure.getMessage());
        Duration wait = poller.backoff();
        LOG.warn("telegram bot '{}': Bot API call failed ({}); checkpoint unchanged, retrying from offset {} in {} ms",
                poller.bot(), failure.getMessage(), poller.offset(), wait.toMillis());
        return wait;
    }
}
