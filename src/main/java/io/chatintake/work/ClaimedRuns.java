package io.chatintake.work;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The runs this process holds claims on: queued for a worker, in a worker's slice, or running. A
 * slice whose handler stalls ({@link Slice#STALL}) hands the runs it has not started back to the
 * queue, so a slow chat holds up only itself.
 */
final class ClaimedRuns {
    private static final Logger LOG = LoggerFactory.getLogger(ClaimedRuns.class);

    private final Map<Long, ActiveRun> active = new ConcurrentHashMap<>();
    /** Runs claimed by this process that no worker has taken yet. */
    private final Deque<ActiveRun> queued = new ConcurrentLinkedDeque<>();
    private final Set<Slice> slices = ConcurrentHashMap.newKeySet();
    /** Until when runs may start on these claims, as {@link ClaimKeeper} says. */
    final ClaimDeadline deadline = new ClaimDeadline();
    private final WorkerWakeups wakeups;
    private final WorkMetrics metrics;

    ClaimedRuns(WorkerWakeups wakeups, WorkMetrics metrics) {
        this.wakeups = wakeups;
        this.metrics = metrics;
    }

    /** Queues newly claimed runs; other idle workers are woken to take their share. */
    void add(List<WorkRun> runs) {
        for (WorkRun run : runs) {
            ActiveRun claimed = new ActiveRun(run);
            active.put(run.token(), claimed);
            queued.add(claimed);
        }
        if (runs.size() > 1) {
            wakeups.wakeAll();
        }
    }

    /** Whether a handler run may start now: these claims cannot have been released yet ({@link ClaimDeadline}). */
    boolean mayStart() {
        return deadline.mayStart();
    }

    boolean noneQueued() {
        return queued.isEmpty();
    }

    /**
     * Queued runs for a worker: one when there are no more runs than workers (each gets its own at
     * once), else up to {@code runSize} items (unless one run is longer), recorded in one commit.
     */
    List<ActiveRun> takeSlice(int workers, int runSize) {
        int share = queued.size() <= workers ? 1 : Integer.MAX_VALUE;
        List<ActiveRun> slice = new ArrayList<>();
        int items = 0;
        while (slice.size() < share && items < runSize) {
            ActiveRun run = queued.poll();
            if (run == null) {
                break;
            }
            if (run.move(ActiveRun.State.QUEUED, ActiveRun.State.SLICED)) {
                slice.add(run);
                items += run.run.items().size();
            }
        }
        return slice;
    }

    /** Every queued run, no longer queued (a stopping dispatcher gives them back). */
    List<ActiveRun> takeQueued() {
        List<ActiveRun> runs = new ArrayList<>();
        for (ActiveRun run = queued.poll(); run != null; run = queued.poll()) {
            runs.add(run);
        }
        return runs;
    }

    ActiveRun get(long token) {
        return active.get(token);
    }

    /** The tokens of every run held here, for extending their claims. */
    List<Long> tokens() {
        return List.copyOf(active.keySet());
    }

    /** The run's claim is no longer this process's to keep (recorded, given back). */
    void forget(ActiveRun run) {
        active.remove(run.run.token());
    }

    void sliceStarted(Slice slice) {
        slices.add(slice);
    }

    void sliceEnded(Slice slice) {
        slices.remove(slice);
    }

    int stalledHandlers() {
        long now = System.nanoTime();
        return (int) slices.stream().filter(slice -> slice.stalled(now)).count();
    }

    /** The runs of stalled slices that no worker started yet go back to the queue, first. */
    void handBackStalled() {
        long now = System.nanoTime();
        int handedBack = 0;
        for (Slice slice : slices) {
            if (!slice.stalled(now)) {
                continue;
            }
            for (ActiveRun run : slice.runs) {
                if (run.move(ActiveRun.State.SLICED, ActiveRun.State.QUEUED)) {
                    queued.addFirst(run);
                    handedBack++;
                }
            }
        }
        if (handedBack > 0) {
            LOG.debug("work: {} run(s) waiting behind a slow handler went to other workers", handedBack);
            wakeups.wakeAll();
        }
    }

    /**
     * The run's claim is lost: its outcomes from now on are dropped (told once per claim). The first
     * time, {@code queue} is asked whether the database server started since the claim: a claim does
     * not wait for the disk, so a server that crashed right after it may have come back without it.
     */
    void claimLost(ActiveRun current, int dropped, WorkQueue queue) {
        if (current.lost.compareAndSet(false, true)) {
            WorkRun run = current.run;
            String chat = run.laned() ? " chat " + run.chatKey() : "";
            if (queue.restartedWithin(Duration.ofNanos(System.nanoTime() - current.claimedAt))) {
                LOG.warn("work: the claim on {} item(s) of {}{} (from item {}) was lost in a restart of the database; {} outcome(s)"
                        + " of this worker dropped, the items run again", run.items().size(), run.kind(), chat, run.items().get(0).id(),
                        dropped);
            } else {
                LOG.warn("work: the claim on {} item(s) of {}{} (from item {}) was released or taken over; {} outcome(s) of this"
                        + " worker dropped, the items are another claim's now", run.items().size(), run.kind(), chat,
                        run.items().get(0).id(), dropped);
            }
        }
        metrics.dropped(current.run.kind(), dropped);
    }
}
