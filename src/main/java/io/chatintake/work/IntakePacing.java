package io.chatintake.work;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The workers' limit while intake is behind (webhook deliveries queue for a transaction, a poll's
 * answer for a thread) or its source holds a backlog (Telegram polls came back full several times
 * in a row): for {@link #INTAKE_BEHIND} after intake last said so, at most
 * {@code work.concurrency-while-intake-behind} workers claim or handle, and lane claims are paced by
 * {@code work.gather-millis-while-intake-behind}, or by {@code work.gather-millis-while-backlog-at-source}
 * while a source holds a backlog: storing and confirming get the cores first, and the work they
 * store waits in the database, where it is safe, until intake has caught up. A backlog at the
 * source is paced harder because what it holds is lost if intake does not take it in time
 * (Telegram keeps updates for 24 hours), while deliveries that queue are normal traffic whose
 * handling must keep up with it. A handler stalled on a slow call ({@link Slice#STALL}) uses no
 * core and does not count.
 * <p>
 * Yielding is for bursts, and bounded. After {@code work.intake-first-seconds} of it without a
 * break, handlers get every other {@link #SHARE} at full speed for as long as intake stays busy,
 * so they keep at least about half their rate. And once a claim finds work that has waited longer
 * than {@code work.max-deferral-seconds}, handlers stop yielding until the work is worked down (a
 * claim finds nothing that waited even half as long).
 */
final class IntakePacing {
    private static final Logger LOG = LoggerFactory.getLogger(IntakePacing.class);
    /** How long intake counts as behind after it last said so: the workers it held back start soon after it caught up. */
    static final Duration INTAKE_BEHIND = Duration.ofMillis(500);
    /** After intake's first turn, handlers and intake take turns of this length while intake stays busy. */
    static final Duration SHARE = Duration.ofSeconds(1);

    private final int concurrency;
    private final int concurrencyWhileBehind;
    private final Duration gatherWhileBehind;
    private final Duration gatherWhileBacklog;
    private final long intakeFirstNanos;
    private final Duration maxDeferral;
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
    /** System.nanoTime() when intake last started being behind after it had caught up. */
    private volatile long spellStart = System.nanoTime();
    /** The same moment on the wall clock, for people. */
    private volatile Instant spellStartedAt;
    /** Work waited longer than the maximum deferral: handlers do not yield until it is worked down. */
    private volatile boolean overdue;

    IntakePacing(int concurrency, int concurrencyWhileBehind, Duration gatherWhileBehind, Duration gatherWhileBacklog,
                 Duration intakeFirst, Duration maxDeferral, Duration pollInterval, ClaimedRuns runs, WorkerWakeups wakeups,
                 AtomicBoolean running) {
        this.concurrency = concurrency;
        this.concurrencyWhileBehind = concurrencyWhileBehind;
        this.gatherWhileBehind = gatherWhileBehind;
        this.gatherWhileBacklog = gatherWhileBacklog;
        this.intakeFirstNanos = intakeFirst.toNanos();
        this.maxDeferral = maxDeferral;
        this.pollInterval = pollInterval;
        this.runs = runs;
        this.wakeups = wakeups;
        this.running = running;
    }

    /** A hint, like a nudge; it never waits. */
    void intakeBehind() {
        long now = System.nanoTime();
        noteSpell(now);
        behindUntil = now + INTAKE_BEHIND.toNanos();
    }

    /** A hint, like a nudge; it never waits. A backlog at the source means intake is behind as well. */
    void backlogAtSource() {
        long now = System.nanoTime();
        noteSpell(now);
        long until = now + INTAKE_BEHIND.toNanos();
        backlogUntil = until;
        behindUntil = until;
    }

    /** A signal after intake had caught up starts a new spell. */
    private void noteSpell(long now) {
        if (behindUntil - now <= 0) {
            spellStart = now;
            spellStartedAt = Instant.now();
        }
    }

    /**
     * What a claim found: the lane due longest had been due this long. Past the maximum deferral,
     * handlers stop yielding to intake; they yield again once claims find nothing that waited half as long.
     */
    void workWaited(Duration longestDue) {
        if (!overdue && longestDue.compareTo(maxDeferral) > 0) {
            overdue = true;
            LOG.info("work: work has waited {} s, longer than work.max-deferral-seconds ({}); handlers stop yielding to intake"
                    + " until it is worked down", longestDue.toSeconds(), maxDeferral.toSeconds());
        } else if (overdue && longestDue.compareTo(maxDeferral.dividedBy(2)) < 0) {
            overdue = false;
            LOG.info("work: waiting work is worked down; handlers yield to intake again while it is busy");
        }
    }

    /** Since when handlers yield to intake, without a break; null while they do not. */
    Instant heldBackSince() {
        return behind(System.nanoTime()) && !overdue ? spellStartedAt : null;
    }

    private boolean behind(long now) {
        return behindUntil - now > 0;
    }

    /** Whether handlers yield to intake at {@code now}: intake is behind, no work is overdue, and it is not the handlers' turn. */
    private boolean yielding(long now) {
        if (overdue || !behind(now)) {
            return false;
        }
        long pastFirstTurn = now - spellStart - intakeFirstNanos;
        return pastFirstTurn < 0 || (pastFirstTurn / SHARE.toNanos()) % 2 == 1;
    }

    /** Nanoseconds until {@link #yielding} may change by itself (a turn ends, or intake's last hint ages out). */
    private long untilChange(long now) {
        long behind = behindUntil - now;
        long pastFirstTurn = now - spellStart - intakeFirstNanos;
        long turnLeft = pastFirstTurn < 0 ? -pastFirstTurn : SHARE.toNanos() - pastFirstTurn % SHARE.toNanos();
        return Math.max(0, Math.min(behind, turnLeft));
    }

    int workersAllowed() {
        return yielding(System.nanoTime()) ? Math.min(concurrency, concurrencyWhileBehind) : concurrency;
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
            long change = untilChange(System.nanoTime());
            wakeups.await(Math.max(1, Math.min(TimeUnit.NANOSECONDS.toMillis(change), pollInterval.toMillis())), running::get);
            return true;
        }
    }

    void doneWorking() {
        working.decrementAndGet();
    }

    /**
     * When the next lane claim may be made, given the last one's time and the gathering wait
     * {@code gatheredUntil} (System.nanoTime()): while handlers yield, not before
     * {@code work.gather-millis-while-intake-behind} after the last claim (while its source holds a
     * backlog, {@code work.gather-millis-while-backlog-at-source}), so the worker left then takes
     * longer runs less often and handling costs the cores intake needs less. Asked again while the
     * worker waits: once intake has caught up, or the handlers' turn has come, the claim need not
     * wait out the pace.
     */
    long nextLaneClaim(long gatheredUntil, long lastClaimedAt) {
        long now = System.nanoTime();
        Duration pace = !yielding(now) ? Duration.ZERO : backlogUntil - now > 0 ? gatherWhileBacklog : gatherWhileBehind;
        long paced = lastClaimedAt + pace.toNanos();
        return paced - gatheredUntil > 0 ? paced : gatheredUntil;
    }
}
