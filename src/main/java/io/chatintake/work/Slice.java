package io.chatintake.work;

import java.time.Duration;
import java.util.List;

/** The runs a worker took to handle one after the other, and since when its current handler runs. */
final class Slice {
    /** A handler running this long hands the runs queued behind it in its slice to other workers. */
    static final Duration STALL = Duration.ofMillis(500);

    final List<ActiveRun> runs;
    /** System.nanoTime() when the current handler started; 0: none runs. */
    private volatile long handlerSince;

    Slice(List<ActiveRun> runs) {
        this.runs = runs;
    }

    void handlerStarted() {
        handlerSince = System.nanoTime();
    }

    void handlerEnded() {
        handlerSince = 0;
    }

    /** Its handler has run longer than {@link #STALL} at {@code now} (System.nanoTime()). */
    boolean stalled(long now) {
        long since = handlerSince;
        return since != 0 && now - since >= STALL.toNanos();
    }
}
