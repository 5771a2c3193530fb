package io.chatintake.album;

import io.chatintake.config.Settings;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;

/**
 * How long an album must stay without a new child before it is decided without a consistent
 * total: an operating policy, not a completion signal. A channel whose albums never carry a total
 * contributes its own quiet period ({@link QuietPeriod}), by provider.
 */
public record QuietPeriods(Duration other, Map<String, Duration> byProvider) {
    /** The built-in ones (the jar's application.properties). */
    public static final QuietPeriods DEFAULTS = from(Settings.of(Map.of()));

    public QuietPeriods {
        byProvider = Map.copyOf(byProvider);
    }

    /** {@code other} for every provider, and {@code own} for each that contributes its own quiet period. */
    public QuietPeriods(Duration other, Duration own) {
        this(other, each(key -> own));
    }

    public static QuietPeriods from(Settings settings) {
        return new QuietPeriods(Duration.ofSeconds(settings.getLong("albums.quiet-period-seconds")),
                each(key -> Duration.ofSeconds(settings.getLong(key))));
    }

    private static Map<String, Duration> each(Function<String, Duration> periodOfSettingKey) {
        Map<String, Duration> periods = new LinkedHashMap<>();
        QuietPeriod.registered().forEach(q -> periods.put(q.provider(), periodOfSettingKey.apply(q.settingKey())));
        return periods;
    }
}
