package io.chatintake.album;

import io.chatintake.config.Settings;
import java.time.Duration;
import java.util.Map;

/**
 * How long an album must stay without a new child before it is decided without a consistent
 * total: an operating policy, not a completion signal. Telegram albums never
 * carry a total, so only their own, shorter quiet period closes them.
 */
public record QuietPeriods(Duration other, Duration telegram) {
    /** The built-in ones (the jar's application.properties). */
    public static final QuietPeriods DEFAULTS = from(Settings.of(Map.of()));

    public static QuietPeriods from(Settings settings) {
        return new QuietPeriods(Duration.ofSeconds(settings.getLong("albums.quiet-period-seconds")),
                Duration.ofSeconds(settings.getLong("albums.telegram-quiet-period-seconds")));
    }
}
