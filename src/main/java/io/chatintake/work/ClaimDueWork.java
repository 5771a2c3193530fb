package io.chatintake.work;

import io.chatintake.store.OperatorPause;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Claims due work for this process and queues it here ({@link ClaimedRuns}): the runs of up to
 * {@link #LANES_PER_CLAIM} due lanes at once, gathered for a moment when they come in thin
 * ({@link Gathering}), or one item without a chat. Kinds an operator paused are not claimed.
 */
final class ClaimDueWork {
    /** Lanes one claim takes at most: a burst over many chats costs a few claims and commits, not one per chat. */
    static final int LANES_PER_CLAIM = 32;
    /** How often a worker waiting out intake's pace looks again whether intake has caught up. */
    private static final Duration PACE_LOOK = Duration.ofMillis(50);

    private final WorkQueue queue;
    private final String worker;
    private final Duration claim;
    private final int runSize;
    private final HandlerSources sources;
    private final ClaimedRuns runs;
    private final IntakePacing pacing;
    private final Gathering gathering;
    private final OperatorPause.Watch pausedKinds;
    private final ReentrantLock laneClaim = new ReentrantLock();
    /** System.nanoTime() before which the next lane claim gathers; guarded by laneClaim, as is gathering. */
    private long gatheredUntil = System.nanoTime();
    /** System.nanoTime() of the last lane claim, which paces claims while intake is behind; guarded by laneClaim. */
    private long laneClaimedAt = System.nanoTime();

    ClaimDueWork(WorkQueue queue, String worker, Duration claim, int runSize, HandlerSources sources,
                 ClaimedRuns runs, IntakePacing pacing, Gathering gathering, OperatorPause.Watch pausedKinds) {
        this.queue = queue;
        this.worker = worker;
        this.claim = claim;
        this.runSize = runSize;
        this.sources = sources;
        this.runs = runs;
        this.pacing = pacing;
        this.gathering = gathering;
        this.pausedKinds = pausedKinds;
    }

    /**
     * Claims the runs of up to {@link #LANES_PER_CLAIM} due lanes and queues them here.
     * @return whether anything was claimed
     */
    boolean claimLanes() throws SQLException {
        // One worker of this process claims lanes at a time: one claim takes all that is due (up
        // to its limit), so a second one at the same moment would only split it into smaller
        // claims, each with its own commits, competing for the same lanes. The next one waits and
        // then claims what is still due, so a nudge it was woken by is never lost.
        laneClaim.lock();
        try {
            gather();
            Claimed lanes = queue.claimLanes(worker, claim, runSize, LANES_PER_CLAIM, sources.orderedKinds(), claimable());
            // A claim that found nothing changes nothing: the worker waits for new work, and claims it as soon as allowed.
            if (lanes.items() > 0) {
                gatheredUntil = System.nanoTime() + gathering.after(lanes.items(), lanes.runs().size(), lanes.lanesLooked() >= LANES_PER_CLAIM);
            }
            laneClaimedAt = System.nanoTime();
            pacing.workWaited(lanes.longestDue());
            runs.add(lanes.runs());
            return !lanes.runs().isEmpty();
        } finally {
            laneClaim.unlock();
        }
    }

    boolean claimUnlaned() throws SQLException {
        WorkRun run = queue.claimUnlaned(worker, claim, claimable());
        if (run != null) {
            runs.add(List.of(run));
        }
        return run != null;
    }

    /**
     * The kinds this process has a handler for, less those paused: their items stay as they are
     * (pending, or failed awaiting a retry), spend no attempt, and their lanes keep their order.
     */
    private Set<String> claimable() throws SQLException {
        Set<String> kinds = new TreeSet<>(sources.kinds());
        kinds.removeAll(pausedKinds.paused().keySet());
        return kinds;
    }

    /** Waits as long as {@link Gathering} said after the previous lane claim, and as intake's pace says. */
    private void gather() {
        long wait;
        while ((wait = pacing.nextLaneClaim(gatheredUntil, laneClaimedAt) - System.nanoTime()) > 0) {
            try {
                TimeUnit.NANOSECONDS.sleep(Math.min(wait, PACE_LOOK.toNanos()));
            } catch (InterruptedException e) {
                // as in the idle wait: a stray interrupt does not end the worker
                return;
            }
        }
    }
}
