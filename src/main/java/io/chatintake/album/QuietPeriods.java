package io.chatintake.album;

import io.chatintake.config.Settings;
import java.time.Duration;

/**
 * How long an album must stay without a new child before it is decided without a consistent
 * total: an operating policy, not a completion signal. Telegram albums never
 * carry a total, so only their own, shorter quiet period closes them.
 */
public record QuietPeriods(Duration other, Duration telegram) {
    public static final QuietPeriods DEFAULTS = new QuietPeriods(Duration.ofSeconds(20), Duration.ofSeconds(5));

    public static QuietPeriods from(Settings settings) {
        return new QuietPeriods(Duration.ofSeconds(settings.getLong("albums.quiet-period-seconds", DEFAULTS.other().toSeconds())),
                Duration.ofSeconds(settings.getLong("albums.telegram-quiet-period-seconds", DEFAULTS.telegram().toSeconds())));
    }
}
