package io.chatintake.channel.telegram;

import io.chatintake.channel.telegram.TelegramInboxConsumerHealthCheck.Phase;
import java.sql.SQLException;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The database failed: the batch was not confirmed, so polling again from the same offset gets it again. */
final class OnStorageFailure implements PollFailurePolicy {
    private static final Logger LOG = LoggerFactory.getLogger(OnStorageFailure.class);

    @Override
    public Duration handle(Exception failure, BotPoller poller) {
        poller.metrics().error(TelegramMetrics.PollError.STORAGE);
        poller.health().enter(Phase.BACKING_OFF, "storage failed (SQLState " + ((SQLException) failure).getSQLState() + ")");
        Duration wait = poller.backoff();
        if (poller.cutOff()) {
            // The poller said it is cut off, once; each failed renewal meanwhile is no news.
            LOG.debug("telegram bot '{}': still cut off from the database; trying again in {} ms: {}", poller.bot(), wait.toMillis(),
                    failure.getMessage());
        } else {
            LOG.warn("telegram bot '{}': storage failed, checkpoint not advanced; polling again from offset {} in {} ms: {}",
                    poller.bot(), poller.offset(), wait.toMillis(), failure.getMessage());
        }
        return wait;
    }
}
