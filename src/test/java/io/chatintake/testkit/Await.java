package io.chatintake.testkit;

import java.time.Duration;
import java.util.function.BooleanSupplier;
import javax.sql.DataSource;

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

    /**
     * Waits until the runner's scheduler has made work items of all the work its intake staged
     * (webhook deliveries are answered before their work items exist; the items follow at once).
     */
    public static void workScheduled(DataSource db) {
        until("staged work to become work items", Duration.ofSeconds(10), () -> Sql.count(db, "SELECT count(*) FROM work_staged") == 0);
    }

    private static boolean holds(BooleanSupplier condition) {
        try {
            return condition.getAsBoolean();
        } catch (RuntimeException e) {
            return false;
        }
    }
}
