package io.chatintake.channel.telegram;

import io.chatintake.channel.telegram.TelegramInboxConsumerHealthCheck.Phase;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Anything else is a bug to be seen: logged with its stack trace, then retried with backoff. */
final class OnUnexpectedFailure implements PollFailurePolicy {
    private static final Logger LOG = LoggerFactory.getLogger(OnUnexpectedFailure.class);

    @Override
    public Duration handle(Exception failure, BotPoller poller) {
        poller.health().enter(Phase.BACKING_OFF, "unexpected failure: " + failure.getClass().getSimpleName());
        Duration wait = poller.backoff();
        LOG.error("telegram bot '{}': unexpected failure, checkpoint unchanged; retrying in {} ms", poller.bot(), wait.toMillis(), failure);
        return wait;
    }
}
