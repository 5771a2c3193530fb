package io.chatintake.work;

import java.util.function.BooleanSupplier;

/**
 * Where idle workers wait, and how they are woken: intake's nudge wakes one, queued runs or a stop
 * wake all. A nudge that comes while a worker is looking is not lost: it looks again at once.
 */
final class WorkerWakeups {
    private boolean nudged;

    /** New items were stored: one idle worker wakes. Never waits for a worker. */
    synchronized void nudge() {
        nudged = true;
        notify();
    }

    /** Runs are queued here for every worker, or the dispatcher stops. */
    synchronized void wakeAll() {
        nudged = true;
        notifyAll();
    }

    /** A worker starts looking for work: nudges from now on count. */
    synchronized void looking() {
        nudged = false;
    }

    /** Waits up to {@code millis} unless nudged since {@link #looking} or {@code idle} no longer holds. */
    synchronized void awaitWork(long millis, BooleanSupplier idle) {
        if (!nudged && idle.getAsBoolean()) {
            waitQuietly(millis);
        }
    }

    /** Waits up to {@code millis} or until woken, while {@code waiting} holds. */
    synchronized void await(long millis, BooleanSupplier waiting) {
        if (waiting.getAsBoolean()) {
            waitQuietly(millis);
        }
    }

    private void waitQuietly(long millis) {
        try {
            wait(Math.max(1, millis));
        } catch (InterruptedException e) {
            // Nothing interrupts workers to stop them (a stop clears their flag): a stray interrupt,
            // e.g. left by a handler, must not end a worker.
        }
    }
}
