package io.chatintake.testkit;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/** Waits for a condition that real processes and servers reach in their own time. */
public final class Await {
    private Await() {
    }

    /** A check that throws (e.g. the database is still down) counts as not yet. */
    public static void until(String what, Duration timeout, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!holds(condition)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + timeout + " waiting for: " + what + RunnerProcess.diagnostics());
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        }
    }

    private static boolean holds(BooleanSupplier condition) {
        try {
            return condition.getAsBoolean();
        } catch (RuntimeException e) {
            return false;
        }
    }
}
