package io.chatintake.telegram;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/** Exponential backoff with jitter and a cap, so many pollers that failed together do not retry together. */
final class Backoff {
    private final Duration base;
    private final Duration cap;
    private int failures;

    Backoff(Duration base, Duration cap) {
        this.base = base;
        this.cap = cap;
    }

    /** The wait before the next attempt: between half and all of min(cap, base * 2^failures). */
    Duration next() {
        long ceiling = Math.min(cap.toMillis(), base.toMillis() << Math.min(failures, 20));
        failures++;
        long half = ceiling / 2;
        return Duration.ofMillis(half + ThreadLocalRandom.current().nextLong(ceiling - half + 1));
    }

    void reset() {
        failures = 0;
    }
}
