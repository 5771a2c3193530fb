package io.chatintake.work;

import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One dispatcher worker, until the dispatcher stops: takes a slice of the runs queued here and
 * executes it ({@link ExecutePicked}), else claims due work ({@link ClaimDueWork}), else waits to
 * be woken or for the poll interval. An unexpected failure is logged and the worker goes on.
 */
final class RunUntilShutdown implements Runnable {
    private static final Logger LOG = LoggerFactory.getLogger(RunUntilShutdown.class);

    private final AtomicBoolean running;
    private final ClaimedRuns runs;
    private final IntakePacing pacing;
    private final ClaimDueWork claiming;
    private final ExecutePicked executing;
    private final WorkerWakeups wakeups;
    private final WorkMetrics metrics;
    private final int workers;
    private final int runSize;
    private final Duration pollInterval;

    RunUntilShutdown(AtomicBoolean running, ClaimedRuns runs, IntakePacing pacing, ClaimDueWork claiming, ExecutePicked executing,
                     WorkerWakeups wakeups, WorkMetrics metrics, int workers, int runSize, Duration pollInterval) {
        this.running = running;
        this.runs = runs;
        this.pacing = pacing;
        this.claiming = claiming;
        this.executing = executing;
        this.wakeups = wakeups;
        this.metrics = metrics;
        this.workers = workers;
        this.runSize = runSize;
        this.pollInterval = pollInterval;
    }

    @Override
    public void run() {
        while (running.get()) {
            try {
                work();
            } catch (RuntimeException e) {
                LOG.error("work: a dispatcher worker failed; it goes on", e);
            }
        }
    }

    private void work() {
        boolean lanesFirst = Thread.currentThread().getName().hashCode() % 2 == 0;
        while (running.get()) {
            wakeups.looking();
            if (!runs.mayStart()) {
                // Cut off from the database: runs claimed here wait, lost or not, until the keeper knows.
                wakeups.await(pollInterval.toMillis(), running::get);
                continue;
            }
            if (pacing.waitedForIntake()) {
                continue;
            }
            boolean found = false;
            try {
                List<ActiveRun> slice = runs.takeSlice(workers, runSize);
                if (!slice.isEmpty()) {
                    executing.execute(new Slice(slice));
                    continue;
                }
                metrics.refreshDepth();
                // Alternating, so that neither chats nor items without a chat can starve the other.
                found = lanesFirst ? claiming.claimLanes() : claiming.claimUnlaned();
                if (!found) {
                    found = lanesFirst ? claiming.claimUnlaned() : claiming.claimLanes();
                }
                lanesFirst = !lanesFirst;
            } catch (SQLException e) {
                LOG.warn("work: cannot claim work ({}); retrying", e.getMessage());
            } finally {
                pacing.doneWorking();
            }
            if (!found) {
                wakeups.awaitWork(pollInterval.toMillis(), () -> running.get() && runs.noneQueued());
            }
        }
    }
}
