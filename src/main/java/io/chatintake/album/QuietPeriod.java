package io.chatintake.album;

import io.chatintake.support.Contributions;
import java.util.List;

/**
 * A channel's own quiet period for its albums, read from {@code settingKey} (seconds): the
 * channel knows its albums, the album layer only applies the period to the children of that
 * provider.
 */
public record QuietPeriod(String provider, String settingKey) {

    /** What a channel registers (in {@code META-INF/services}) to give its albums their own quiet period. */
    public interface Contributor {
        List<QuietPeriod> quietPeriods();
    }

    /** The quiet periods the channels on the class path contribute. */
    public static List<QuietPeriod> registered() {
        return Contributions.of(Contributor.class, Contributor::quietPeriods);
    }
}
