package io.chatintake.work;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The workers' limit while intake is behind (webhook deliveries queue for a transaction, a poll's
 * answer for a thread) or its source holds a backlog (a Telegram poll came back full): for
 * {@link #INTAKE_BEHIND} after intake last said so, at most {@code work.concurrency-while-intake-behind}
 * workers claim or handle, and lane claims are paced by {@code work.gather-millis-while-intake-behind}, or by
 * {@code work.gather-millis-while-backlog-at-source} while a source holds a backlog: storing and
 * confirming get the cores first, and the work they store waits in the database, where it is
 * safe, until intake has caught up. A backlog at the source is paced harder because what it holds
 * is lost if intake does not take it in time (Telegram keeps updates for 24 hours), while
 * deliveries that queue are normal traffic whose handling must keep up with it.
 * A handler stalled on a slow call ({@link Slice#STALL}) uses no core and does not count.
 */
final class IntakePacing {
    /** How long intake counts as behind after it last said so: the workers it held back start soon after it caught up. */
    static final Duration INTAKE_BEHIND = Duration.ofMillis(500);

    private final int concurrency;
    private final int concurrencyWhileBehind;
    private final Duration gatherWhileBehind;
    private final Duration gatherWhileBacklog;
    private final Duration pollInterval;
    private final ClaimedRuns runs;
    private final WorkerWakeups wakeups;
    private final AtomicBoolean running;
    /** Workers claiming or handling right now (not those waiting for work or for intake). */
    private final AtomicInteger working = new AtomicInteger();
    /** System.nanoTime() until which intake is behind its source. */
    private volatile long behindUntil = System.nanoTime();
    /** System.nanoTime() until which intake's source holds a backlog. */
    private volatile long backlogUntil = System.nanoTime();
    /** When the current spell of holding handlers back began (wall clock, for people). */
    private volatile Instant heldBackSince;

    IntakePacing(int concurrency, int concurrencyWhileBehind, Duration gatherWhileBehind, Duration gatherWhileBacklog,
                 Duration pollInterval, ClaimedRuns runs, WorkerWakeups wakeups, AtomicBoolean running) {
        this.concurrency = concurrency;
        this.concurrencyWhileBehind = concurrencyWhileBehind;
        this.gatherWhileBehind = gatherWhileBehind;
        this.gatherWhileBacklog = gatherWhileBacklog;
        this.pollInterval = pollInterval;
        this.runs = runs;
        this.wakeups = wakeups;
        this.running = running;
    }

    /** A hint, like a nudge; it never waits. */
    void intakeBehind() {
        long now = System.nanoTime();
        noteHeldBack(now);
        behindUntil = now + INTAKE_BEHIND.toNanos();
    }

    /** A hint, like a nudge; it never waits. A backlog at the source means intake is behind as well. */
    void backlogAtSource() {
        long now = System.nanoTime();
        noteHeldBack(now);
        long until = now + INTAKE_BEHIND.toNanos();
        backlogUntil = until;
        behindUntil = until;
    }

    /** A signal after intake had caught up starts a new spell of holding handlers back. */
    private void noteHeldBack(long now) {
        if (behindUntil - now <= 0) {
            heldBackSince = Instant.now();
        }
    }

    /** Since when handling is being held back for intake, without a break; null while it is not. */
    Instant heldBackSince() {
        return behind() ? heldBackSince : null;
    }

    private boolean behind() {
        return behindUntil - System.nanoTime() > 0;
    }

    private boolean backlog() {
        return backlogUntil - System.nanoTime() > 0;
    }

    int workersAllowed() {
        return behind() ? Math.min(concurrency, concurrencyWhileBehind) : concurrency;
    }

    /**
     * @return true when this worker waited instead of working (it looks again); false when it may
     *         work, counted until it calls {@link #doneWorking}
     */
    boolean waitedForIntake() {
        while (true) {
            int now = working.get();
            int allowed = workersAllowed();
            if (allowed >= concurrency || now - runs.stalledHandlers() < allowed) {
                if (working.compareAndSet(now, now + 1)) {
                    return false;
                }
                continue;
            }
            long behind = behindUntil - System.nanoTime();
            wakeups.await(Math.min(TimeUnit.NANOSECONDS.toMillis(behind), pollInterval.toMillis()), running::get);
            return true;
        }
    }

    void doneWorking() {
        working.decrementAndGet();
    }

    /**
     * When the next lane claim may be made, given the last one's time and the gathering wait
     * {@code gatheredUntil} (System.nanoTime()): while intake is behind, not before
     * {@code work.gather-millis-while-intake-behind} after the last claim (while its source holds a
     * backlog, {@code work.gather-millis-while-backlog-at-source}), so the worker left then takes
     * longer runs less often and handling costs the cores intake needs less. Asked again while the
     * worker waits: once intake has caught up, the claim need not wait out the pace.
     */
    long nextLaneClaim(long gatheredUntil, long lastClaimedAt) {
        Duration pace = backlog() ? gatherWhileBacklog : behind() ? gatherWhileBehind : Duration.ZERO;
        long paced = lastClaimedAt + pace.toNanos();
        return paced - gatheredUntil > 0 ? paced : gatheredUntil;
    }
}
