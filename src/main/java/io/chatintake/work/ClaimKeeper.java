package io.chatintake.work;

import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps this process's claims: beats in {@code runner_heartbeat}, extends the claims of runs still
 * running here every third of the claim time (a slow handler keeps its claim), releases the claims
 * of processes silent for {@code work.dead-after-heartbeats} intervals (a killed process's chats
 * move on within seconds), and hands runs waiting behind a stalled handler to other workers.
 * It tells the {@link ClaimDeadline} until when runs may start here: a process cut off from the
 * database stops starting them before its claims can be released, and after a lapse extends its
 * claims at once, so that the runs another process took over meanwhile never start here.
 * Runs from the dispatcher's start until its last worker has stopped.
 */
final class ClaimKeeper implements Runnable {
    private static final Logger LOG = LoggerFactory.getLogger(ClaimKeeper.class);

    private final WorkQueue queue;
    private final RunnerHeartbeat heartbeat;
    private final String worker;
    private final ClaimedRuns runs;
    private final WorkerWakeups wakeups;
    private final Duration claim;
    private final Duration beatEvery;
    private final Duration silence;
    private final Object pause = new Object();
    private volatile boolean beating;
    /** System.nanoTime() when the last beat that went through was sent. */
    private long beatSentAt;

    ClaimKeeper(WorkQueue queue, RunnerHeartbeat heartbeat, String worker, ClaimedRuns runs, WorkerWakeups wakeups, Duration claim,
                Duration beatEvery, Duration silence) {
        this.queue = queue;
        this.heartbeat = heartbeat;
        this.worker = worker;
        this.runs = runs;
        this.wakeups = wakeups;
        this.claim = claim;
        this.beatEvery = beatEvery;
        this.silence = silence;
        // No run starts before the first beat went through: a claim without its heartbeat is a dead process's.
        long now = System.nanoTime();
        beatSentAt = now - silence.toNanos();
        runs.deadline.safeUntil(now);
    }

    /** The first beat, before the first claim, so no claim of this process is ever without its heartbeat. */
    void firstBeat() {
        beating = true;
        try {
            long sent = System.nanoTime();
            heartbeat.beat();
            beaten(sent, sent);
        } catch (SQLException e) {
            LOG.warn("work: first heartbeat not recorded ({}); retried every {} s", e.getMessage(), beatEvery.toSeconds());
        }
    }

    /** Ends the loop; called once the last handler returned. */
    void stopBeating() {
        beating = false;
        synchronized (pause) {
            pause.notifyAll();
        }
    }

    /** On a clean stop (no claims left). */
    void removeHeartbeat() {
        try {
            heartbeat.remove();
        } catch (SQLException e) {
            LOG.debug("work: heartbeat row not removed ({}); it ages out", e.getMessage());
        }
    }

    @Override
    public void run() {
        Duration extendEvery = claim.dividedBy(3);
        Duration tick = extendEvery.compareTo(beatEvery) < 0 ? extendEvery : beatEvery;
        // Stalled slices are looked at twice per STALL; the database work below keeps its own pace.
        tick = tick.compareTo(Slice.STALL.dividedBy(2)) < 0 ? tick : Slice.STALL.dividedBy(2);
        long lastBeat = System.nanoTime();
        long lastExtension = System.nanoTime();
        boolean failing = false;
        // Since when this process's own calls go through: one that could not beat either (its link
        // cut, the database away) cannot tell a dead process from one that could not beat, so it
        // judges others only once its beats went through for the silence.
        long linkUpSince = System.nanoTime() - silence.toNanos();
        while (beating) {
            synchronized (pause) {
                try {
                    pause.wait(Math.max(1, tick.toMillis()));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
            if (!beating) {
                return;
            }
            runs.handBackStalled();
            try {
                if (System.nanoTime() - lastBeat >= beatEvery.toNanos() - tick.toNanos() / 2) {
                    long sent = System.nanoTime();
                    heartbeat.beat();
                    lastBeat = System.nanoTime();
                    if (runs.deadline.passed(lastBeat)) {
                        // Silent long enough for its claims to be released: which were is known before a run starts again.
                        extendClaims();
                        lastExtension = sent;
                    }
                    beaten(sent, lastExtension);
                    linkUpSince = failing ? lastBeat : linkUpSince;
                    int released = lastBeat - linkUpSince < silence.toNanos() ? 0 : queue.releaseClaimsOfDeadProcesses(worker, silence);
                    if (released > 0) {
                        LOG.warn("work: released {} claimed item(s) of process(es) silent for more than {} s; they run again now",
                                released, silence.toSeconds());
                        wakeups.nudge();
                    }
                }
                if (System.nanoTime() - lastExtension >= extendEvery.toNanos() - tick.toNanos() / 2) {
                    long sent = System.nanoTime();
                    extendClaims();
                    lastExtension = sent;
                    beaten(beatSentAt, sent);
                }
                failing = false;
            } catch (SQLException e) {
                // Said when it happens, not only once a worker looks (its own calls may hang as long as the socket timeout).
                runs.mayStart();
                if (!failing) {
                    LOG.warn("work: heartbeat failed ({}); after {} s without one, other processes take this one's claims"
                            + " and its outcomes are dropped", e.getMessage(), silence.toSeconds());
                }
                failing = true;
            }
        }
    }

    /**
     * A beat and an extension went through, sent at these times: the claims held here cannot be
     * released before the silence has passed since the one, nor the claim time since the other.
     */
    private void beaten(long beatSent, long extensionSent) {
        beatSentAt = beatSent;
        long beatHolds = beatSent + silence.toNanos();
        long claimsHold = extensionSent + claim.toNanos();
        runs.deadline.safeUntil((beatHolds - claimsHold < 0 ? beatHolds : claimsHold) - ClaimDeadline.marginNanos(claim, silence));
    }

    void extendClaims() throws SQLException {
        List<Long> tokens = runs.tokens();
        if (tokens.isEmpty()) {
            return;
        }
        Set<Long> held = Set.copyOf(queue.extend(worker, tokens, claim));
        for (Long token : tokens) {
            ActiveRun run = runs.get(token);
            // A run whose end was just committed is not held any more, and is not lost either.
            if (!held.contains(token) && run != null && !run.ending) {
                runs.claimLost(run, 0, queue);
            }
        }
    }
}
