package io.chatintake.work;

import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;
import org.apache.camel.CamelContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The thread that turns staged work ({@link WorkQueue#stageFrom}) into work items and derives
 * stored rows ({@link Derivation}: webhook events) right behind intake: intake commits, answers
 * and tells this thread ({@link #staged}); the thread schedules and derives whatever has been
 * committed by then, many deliveries per transaction, and wakes the handlers. After
 * a pass it gathers for a moment before the next, so that deliveries arriving one at a time are
 * scheduled many per transaction instead of each with a transaction of its own beside them. It
 * also looks every {@link #LOOK_EVERY} by itself, for work staged or rows stored by a process that
 * died before its own scheduler got to them. When the database fails it tries again with backoff;
 * the rows wait in storage meanwhile, and a stop leaves them there for the next scheduler.
 * <p>
 * The thread comes from Camel's ExecutorServiceManager (named, listed by Camel, shut down with the
 * context at the latest). It waits on this object's monitor, which also guards {@link #running}
 * and {@link #staged}.
 */
final class StagedWorkScheduler {
    private static final Logger LOG = LoggerFactory.getLogger(StagedWorkScheduler.class);
    static final int CHUNK = 1000;
    static final Duration LOOK_EVERY = Duration.ofSeconds(1);
    private static final Duration STOP_WAIT = Duration.ofSeconds(30);

    private final WorkQueue queue;
    private final List<Derivation> derivations;
    private final Duration gather;
    private final Runnable afterScheduling;
    private final Backoff backoff = new Backoff(Duration.ofMillis(100), Duration.ofSeconds(5));
    private final CamelContext camel;
    private final ExecutorService thread;
    /** Guarded by this object's monitor. */
    private boolean running = true;
    /** Guarded by this object's monitor. */
    private boolean staged = true;

    /** @param afterScheduling told after each transaction that scheduled something (wakes the handlers) */
    StagedWorkScheduler(CamelContext camel, WorkQueue queue, List<Derivation> derivations, Duration gather, Runnable afterScheduling) {
        this.camel = camel;
        this.queue = queue;
        this.derivations = List.copyOf(derivations);
        this.gather = gather;
        this.afterScheduling = afterScheduling;
        this.thread = camel.getExecutorServiceManager().newSingleThreadExecutor(this, "work-staged-scheduler");
        thread.execute(this::loop);
    }

    /**
     * Work was staged, or rows to derive stored, and committed: schedule and derive now. Never waits. Only the first telling since the
     * last pass wakes the thread: every delivery tells it, and while it gathers the rest would only
     * wake it to wait again.
     */
    synchronized void staged() {
        if (!staged) {
            staged = true;
            notifyAll();
        }
    }

    /** Stops after the transaction in progress, if any, waiting for it at most 30 s (then it is interrupted). */
    void stop() {
        synchronized (this) {
            running = false;
            notifyAll();
        }
        camel.getExecutorServiceManager().shutdownGraceful(thread, STOP_WAIT.toMillis());
    }

    private void loop() {
        while (true) {
            boolean told;
            synchronized (this) {
                if (running && !staged) {
                    waitQuietly(LOOK_EVERY.toMillis());
                }
                if (!running) {
                    return;
                }
                told = staged;
                staged = false;
            }
            try {
                // A look finds nothing almost always (intake no longer stages; a look of its own finds no row to derive): it
                // costs no lock and no transaction then. Staged work first: it is older than any row still to derive.
                boolean any = queue.anyStaged();
                if (any) {
                    drain(queue::scheduleStaged);
                }
                for (Derivation derivation : derivations) {
                    if (told || derivation.anyUnderived()) {
                        drain(derivation::deriveNext);
                        any = true;
                    }
                }
                if (any) {
                    gather();
                }
                backoff.reset();
            } catch (SQLException | RuntimeException e) {
                Duration wait = backoff.next();
                LOG.warn("work: scheduling staged work or deriving stored rows failed; they wait in storage and are taken again in {} ms: {}",
                        wait.toMillis(),
                        e.getMessage());
                synchronized (this) {
                    staged = true;
                    if (running) {
                        waitQuietly(wait.toMillis());
                    }
                }
            }
        }
    }

    @FunctionalInterface
    private interface Chunk {
        int take(int limit) throws SQLException;
    }

    /** Takes chunks until one comes back short, waking the handlers after each that made work. */
    private void drain(Chunk chunk) throws SQLException {
        for (int taken = CHUNK; taken == CHUNK; ) {
            taken = chunk.take(CHUNK);
            if (taken > 0) {
                afterScheduling.run();
            }
        }
    }

    /** Lets what is staged meanwhile gather for the next pass; a stop ends the wait. */
    private synchronized void gather() {
        long until = System.nanoTime() + gather.toNanos();
        for (long left = gather.toMillis(); running && left > 0; left = (until - System.nanoTime()) / 1_000_000) {
            waitQuietly(left);
        }
    }

    /** Waits on this object's monitor, which the caller holds; an interrupt stops the thread. */
    private void waitQuietly(long millis) {
        try {
            wait(millis);
        } catch (InterruptedException e) {
            running = false;
        }
    }
}
