package io.chatintake.channel.telegram;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Clock;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Per-bot intake metrics. The bot label is the configured name (never the token, which is a
 * secret, and not the id, which operators rarely know by heart).
 */
final class TelegramMetrics {
    enum PollError { CONFLICT_409, RATE_LIMITED_429, SERVER_5XX, NETWORK, STORAGE, UNAUTHORIZED, WEBHOOK_SET }

    private final Counter stored;
    private final Counter duplicates;
    private final Counter gaps;
    private final Counter raw;
    private final Counter lossWindows;
    private final Map<PollError, Counter> errors = new EnumMap<>(PollError.class);
    private final AtomicLong nextOffset = new AtomicLong();
    private final AtomicLong pendingUpdates = new AtomicLong(-1);
    private final AtomicLong lastSuccessfulPollMillis = new AtomicLong();

    TelegramMetrics(MeterRegistry registry, String bot, Clock clock) {
        stored = Counter.builder("chat_intake_telegram_updates_stored").tag("bot", bot)
                .description("updates stored in the inbox").register(registry);
        duplicates = Counter.builder("chat_intake_telegram_updates_duplicate").tag("bot", bot)
                .description("updates received again that were already stored").register(registry);
        gaps = Counter.builder("chat_intake_telegram_gaps").tag("bot", bot)
                .description("runs of updates confirmed outside this store (another getUpdates caller)").register(registry);
        raw = Counter.builder("chat_intake_telegram_raw_updates").tag("bot", bot)
                .description("updates PostgreSQL's jsonb refused, stored raw with the reason (telegram_update.stored_raw)")
                .register(registry);
        lossWindows = Counter.builder("chat_intake_telegram_loss_windows").tag("bot", bot)
                .description("possible loss windows recorded (telegram_loss_window): no successful poll for more than 24 h")
                .register(registry);
        for (PollError error : PollError.values()) {
            errors.put(error, Counter.builder("chat_intake_telegram_poll_errors").tag("bot", bot)
                    .tag("kind", error.name().toLowerCase()).register(registry));
        }
        Gauge.builder("chat_intake_telegram_next_offset", nextOffset, AtomicLong::get).tag("bot", bot).register(registry);
        Gauge.builder("chat_intake_telegram_pending_updates", pendingUpdates, AtomicLong::get).tag("bot", bot)
                .description("getWebhookInfo.pending_update_count; -1 until known").register(registry);
        Gauge.builder("chat_intake_telegram_seconds_since_last_poll", lastSuccessfulPollMillis,
                        last -> last.get() == 0 ? -1 : (clock.millis() - last.get()) / 1000.0)
                .description("age of the last successful getUpdates (from the checkpoint after a restart); -1 until known;"
                        + " above 86400 updates may be expiring at Telegram")
                .tag("bot", bot).register(registry);
    }

    void polled(long offset, long nowMillis) {
        nextOffset.set(offset);
        lastSuccessfulPollMillis.set(nowMillis);
    }

    /** The last successful poll as saved in the checkpoint, so the age keeps counting across restarts. */
    void lastSuccess(java.time.Instant at) {
        lastSuccessfulPollMillis.set(at.toEpochMilli());
    }

    void lossWindow() {
        lossWindows.increment();
    }

    void stored(int count, int duplicateCount) {
        stored.increment(count);
        duplicates.increment(duplicateCount);
    }

    void gap() {
        gaps.increment();
    }

    void raw() {
        raw.increment();
    }

    void error(PollError error) {
        errors.get(error).increment();
    }

    void pending(long count) {
        pendingUpdates.set(count);
    }
}
