package io.chatintake.work;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A run claimed by this process, and where it is: queued here, in a worker's slice, or started
 * (then it stays with that worker). {@code lost} once its claim was released or taken over.
 */
final class ActiveRun {
    enum State {
        /** Claimed, waiting here for a worker. */
        QUEUED,
        /** Taken into a worker's slice, not started: a stalled slice hands it back. */
        SLICED,
        /** Its worker runs it; it stays with that worker. */
        STARTED
    }

    final WorkRun run;
    /** When this process took it, just after its claim committed (System.nanoTime()). */
    final long claimedAt = System.nanoTime();
    final AtomicBoolean lost = new AtomicBoolean();
    /** Its end is being recorded: from the commit on its items are no longer running, though it is still held here. */
    volatile boolean ending;
    private final AtomicReference<State> state = new AtomicReference<>(State.QUEUED);

    ActiveRun(WorkRun run) {
        this.run = run;
    }

    /** Moves it from {@code from} to {@code to}; false when it was not in {@code from} (another thread moved it). */
    boolean move(State from, State to) {
        return state.compareAndSet(from, to);
    }
}
