package io.chatintake.channel.telegram;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * getWebhookInfo around polling: whether a webhook is set (then Telegram refuses getUpdates, and
 * the poller says how to switch) and how many updates wait at Telegram (a gauge). It is advisory:
 * a server that cannot answer it (a Bot API emulator without the method answers 404 or 500)
 * never stops polling nor counts as a failed poll. A failed check is logged once, tried again
 * at its own pace ({@link #EVERY}), and its recovery is logged once.
 */
final class WebhookCheck {
    private static final Logger LOG = LoggerFactory.getLogger(WebhookCheck.class);
    static final Duration EVERY = Duration.ofMinutes(1);

    private final String bot;
    private final BotApiClient client;
    private final TelegramMetrics metrics;
    private final Clock clock;
    private Instant lastAttempt = Instant.EPOCH;
    private boolean failing;

    WebhookCheck(String bot, BotApiClient client, TelegramMetrics metrics, Clock clock) {
        this.bot = bot;
        this.client = client;
        this.metrics = metrics;
        this.clock = clock;
    }

    /**
     * Checks now, when a lease is taken.
     *
     * @return the answer, or empty when the server could not give one (polling goes on)
     */
    Optional<BotApiClient.WebhookInfo> now() {
        lastAttempt = clock.instant();
        try {
            BotApiClient.WebhookInfo info = client.getWebhookInfo();
            metrics.pending(info.pendingUpdateCount());
            if (failing) {
                LOG.info("telegram bot '{}': getWebhookInfo answers again", bot);
                failing = false;
            }
            return Optional.of(info);
        } catch (BotApiException e) {
            if (!failing) {
                LOG.warn("telegram bot '{}': getWebhookInfo failed ({}); whether a webhook is set and how many updates wait is"
                        + " unknown, polling goes on; checked again every {} s, logged again only once it answers",
                        bot, e.getMessage(), EVERY.toSeconds());
                failing = true;
            }
            return Optional.empty();
        }
    }

    /**
     * Between polls, for the pending-updates gauge: checks again once {@link #EVERY} has passed
     * since the last attempt, whatever its outcome. (A webhook set meanwhile shows as getUpdates' 409.)
     */
    void whenDue() {
        if (Duration.between(lastAttempt, clock.instant()).compareTo(EVERY) >= 0) {
            now();
        }
    }
}
