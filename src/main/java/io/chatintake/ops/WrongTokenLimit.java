package io.chatintake.ops;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.OptionalLong;

/**
 * How many wrong status tokens each client address may offer: {@code limit} within a window that
 * starts at its first wrong one; past that, every request of that address is answered 429 until
 * the window ends, right token or not, so guessing costs a window per few tries. The addresses
 * remembered are bounded: the oldest window is forgotten first.
 */
final class WrongTokenLimit {
    static final String LIMIT = "chat-intake.status.wrong-guess-limit";
    static final String WINDOW_SECONDS = "chat-intake.status.wrong-guess-window-seconds";
    private static final int MAX_ADDRESSES = 10_000;

    private final int limit;
    private final Duration window;
    private final Clock clock;
    private final Map<String, Window> windows = new LinkedHashMap<>();

    WrongTokenLimit(int limit, Duration window, Clock clock) {
        this.limit = limit;
        this.window = window;
        this.clock = clock;
    }

    /** Seconds this address has to wait before it may try again, or empty when it may try now. */
    synchronized OptionalLong retryAfter(String address) {
        Window w = current(address);
        if (w == null || w.wrong < limit) {
            return OptionalLong.empty();
        }
        return OptionalLong.of(Math.max(1, Duration.between(clock.instant(), w.ends).toSeconds() + 1));
    }

    synchronized void wrong(String address) {
        Window w = current(address);
        if (w == null) {
            if (windows.size() >= MAX_ADDRESSES) {
                windows.remove(windows.keySet().iterator().next());
            }
            w = new Window(clock.instant().plus(window));
            windows.put(address, w);
        }
        w.wrong++;
    }

    private Window current(String address) {
        Window w = windows.get(address);
        if (w != null && !clock.instant().isBefore(w.ends)) {
            windows.remove(address);
            return null;
        }
        return w;
    }

    private static final class Window {
        final Instant ends;
        int wrong;

        Window(Instant ends) {
            this.ends = ends;
        }
    }
}
