package io.chatintake.channel.telegram;

import io.chatintake.channel.telegram.TelegramInboxConsumerHealthCheck.Phase;
import java.time.Duration;
import java.time.Instant;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * 401/404: the token is wrong or revoked. The lease goes to whoever may hold a good token, and the
 * bot is asked about again every minute (a fixed token takes effect without a restart), logged
 * at most once a minute.
 */
final class OnTokenRejected implements PollFailurePolicy {
    private static final Logger LOG = LoggerFactory.getLogger(OnTokenRejected.class);
    static final Duration RECHECK = Duration.ofMinutes(1);

    private Instant lastLog = Instant.EPOCH;

    @Override
    public Duration handle(Exception failure, BotPoller poller) {
        poller.metrics().error(TelegramMetrics.PollError.UNAUTHORIZED);
        poller.health().enter(Phase.UNAUTHORIZED, "the Bot API refused the token; fix " + poller.tokenVariable());
        if (Duration.between(lastLog, Instant.now()).compareTo(RECHECK) >= 0) {
            LOG.error("telegram bot '{}': the Bot API rejected the token ({}); this bot does not poll until the"
                    + " token is fixed ({}), checked again every minute", poller.bot(), failure.getMessage(), poller.tokenVariable());
            lastLog = Instant.now();
        }
        poller.releaseLease();
        poller.forgetIdentity();
        return RECHECK;
    }
}
