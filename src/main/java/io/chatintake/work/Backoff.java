package io.chatintake.work;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Exponential backoff with jitter and a cap, so many workers that failed together do not retry
 * together. Used by pollers (counting their own failures) and by the dispatcher (counting an item's
 * attempts).
 */
public final class Backoff {
    private final Duration base;
    private final Duration cap;
    private int failures;

    public Backoff(Duration base, Duration cap) {
        this.base = base;
        this.cap = cap;
    }

    /** The wait after the given number of failures: between half and all of min(cap, base * 2^(failures-1)). */
    public Duration delayAfter(int failureCount) {
        long ceiling = Math.min(cap.toMillis(), base.toMillis() << Math.min(Math.max(failureCount - 1, 0), 20));
        long half = ceiling / 2;
        return Duration.ofMillis(half + ThreadLocalRandom.current().nextLong(ceiling - half + 1));
    }

    /** Counts one more failure and returns the wait before the next attempt. */
    public Duration next() {
        return delayAfter(++failures);
    }

    public void reset() {
        failures = 0;
    }
}
