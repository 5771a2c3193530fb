package io.chatintake.channel.telegram;

import io.chatintake.support.InformationalHealthCheck;
import java.time.Clock;
import java.time.Instant;
import java.util.Map;
import org.apache.camel.health.HealthCheckResultBuilder;

/**
 * The poller of one bot on {@code /observe/health}, kept by its consumer (as camel-aws2-sqs's
 * consumers keep theirs): {@code polling}, {@code standby} (another process holds the lease),
 * {@code stopped: unauthorized}, {@code stopped: webhook set}, {@code backing off} since when and
 * why, or {@code off} (no token). DOWN while it cannot poll; never part of readiness.
 */
final class TelegramInboxConsumerHealthCheck extends InformationalHealthCheck {
    enum Phase {
        OFF("off", true), STARTING("starting", true), POLLING("polling", true), STANDBY("standby", true), PAUSED("paused", true),
        UNAUTHORIZED("stopped: unauthorized", false), WEBHOOK_SET("stopped: webhook set", false),
        BACKING_OFF("backing off", false);

        final String text;
        final boolean up;

        Phase(String text, boolean up) {
            this.text = text;
            this.up = up;
        }
    }

    private final String bot;
    private final Clock clock;
    private volatile Phase phase = Phase.STARTING;
    private volatile Instant since;
    private volatile String reason;

    TelegramInboxConsumerHealthCheck(String bot, Clock clock) {
        super("telegram-bot-" + bot);
        this.bot = bot;
        this.clock = clock;
        this.since = clock.instant();
    }

    /** A repeated phase keeps its start: backing off since the first failure in a row. */
    void enter(Phase next, String why) {
        if (next != phase) {
            since = clock.instant();
            phase = next;
        }
        reason = why;
    }

    Phase phase() {
        return phase;
    }

    @Override
    protected void doCall(HealthCheckResultBuilder builder, Map<String, Object> options) {
        Phase current = phase;
        String why = reason;
        builder.message("telegram bot '" + bot + "': " + current.text + " since " + since + (why == null ? "" : " (" + why + ")"))
                .detail("bot", bot)
                .detail("state", current.text)
                .detail("since", since.toString());
        if (why != null) {
            builder.detail("reason", why);
        }
        if (current.up) {
            builder.up();
        } else {
            builder.down();
        }
    }
}
