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
            pause();
        }
    }

    private static void pause() {
        try {
            Thread.sleep(50);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /**
     * Load or an outage that must last {@code duration}, watched rather than slept through: checks
     * {@code invariant} until the deadline and fails at once when it stops holding (a throwing
     * check fails too: it is not a state to wait out).
     */
    public static void throughout(String what, Duration duration, BooleanSupplier invariant) {
        long deadline = System.nanoTime() + duration.toNanos();
        while (true) {
            if (!invariant.getAsBoolean()) {
                throw new AssertionError("stopped holding before " + duration + " had passed: " + what + RunnerProcess.diagnostics());
            }
            if (System.nanoTime() >= deadline) {
                return;
            }
            pause();
        }
    }

    /**
     * Waits until the runner's scheduler has made work items of all the work its intake staged and
     * derived every stored webhook event (deliveries are answered before their children and work
     * items exist; those follow at once).
     */
    public static void workScheduled(DataSource db) {
        until("staged work and stored events to become work items", Duration.ofSeconds(10), () -> Sql.count(db,
                "SELECT (SELECT count(*) FROM work_staged) + (SELECT count(*) FROM webhook_event WHERE derived_at IS NULL)") == 0);
    }

    private static boolean holds(BooleanSupplier condition) {
        try {
            return condition.getAsBoolean();
        } catch (RuntimeException e) {
            return false;
        }
    }
}
