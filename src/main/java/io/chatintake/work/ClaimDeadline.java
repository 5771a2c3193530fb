package io.chatintake.work;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Until when this process may start handler runs on its claims, by its own monotonic clock
 * (System.nanoTime()): other processes release its claims once its heartbeat has been silent for
 * the silence, or a claim was not extended for the claim time. {@link ClaimKeeper} counts both from
 * when it sent the statement that went through, never from its answer, so an answer that came late
 * never lengthens them. Past the deadline no run starts here (a handler already running goes on:
 * its outcome is fenced by its claim token); it opens again once a beat went through and, after a
 * lapse, the claims were extended, which tells the runs taken over meanwhile.
 */
final class ClaimDeadline {
    private static final Logger LOG = LoggerFactory.getLogger(ClaimDeadline.class);
    /** Kept short of the deadline: room between the check and a handler's start (less for claims this short). */
    private static final Duration MARGIN = Duration.ofSeconds(1);

    /** False until a keeper watches the claims: without one (a part used on its own) nothing releases them. */
    private volatile boolean kept;
    private volatile long until;
    private final AtomicBoolean stopped = new AtomicBoolean();

    /** How far short of a deadline counted from these times runs stop starting. */
    static long marginNanos(Duration claim, Duration silence) {
        return Math.min(MARGIN.toNanos(), Math.min(claim.toNanos(), silence.toNanos()) / 10);
    }

    /** The keeper's word: no claim held here can be released before {@code until} (System.nanoTime()). */
    void safeUntil(long until) {
        this.until = until;
        kept = true;
        if (System.nanoTime() - until < 0 && stopped.compareAndSet(true, false)) {
            LOG.info("database reachable again: handler runs start again, on the claims this process still holds");
        }
    }

    /** Whether a handler run may start now; the first refusal after a time of starts is logged. */
    boolean mayStart() {
        if (!passed(System.nanoTime())) {
            return true;
        }
        if (stopped.compareAndSet(false, true)) {
            LOG.warn("cut off from the database: stopped starting handler runs before this process's claims could be released;"
                    + " they start again once its heartbeat goes through");
        }
        return false;
    }

    /** Whether the deadline had passed at {@code at} (System.nanoTime()): claims may have been released since. */
    boolean passed(long at) {
        return kept && at - until >= 0;
    }
}
