package io.chatintake.channel.telegram;

import io.chatintake.work.Backoff;
import io.chatintake.work.WorkQueue;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns one bot's stored updates into work, and media-group parts into album children, right
 * behind its poller ({@link ScheduleCheckpoint}):
 * the poller hands over what it stored and goes on to its next getUpdates at once; a pass on
 * the executor every bot shares schedules everything up to there, however many batches that has
 * become meanwhile, and then tells the handlers. What the poller stored under the lease is
 * scheduled as handed over; only what was stored before (read once the lease is taken) is read
 * back from storage. One pass at a time per bot, so its transactions
 * never overlap; an idle bot costs no thread. When the database fails the pass is tried again with
 * backoff, and nothing is lost meanwhile: the rows wait above the mark, in storage. Rows a stop
 * leaves above the mark are scheduled by whoever takes the poll lease next, this process included.
 */
final class UpdateScheduler {
    private static final Logger LOG = LoggerFactory.getLogger(UpdateScheduler.class);
    private static final Duration STOP_WAIT = Duration.ofSeconds(30);

    private final String bot;
    private final long botId;
    private final ScheduleCheckpoint checkpoint;
    private final Runnable afterScheduling;
    private final ScheduledExecutorService executor;
    private final Backoff backoff = new Backoff(Duration.ofMillis(100), Duration.ofSeconds(5));
    // All guarded by this object's monitor.
    private boolean running = true;
    private boolean queued;
    private boolean inPass;
    private long through;
    private long reached;
    private PollLease.Held catchUp;
    /** What the poller stored under the current lease and is not scheduled yet, in row order. */
    private final List<WorkQueue.NewWork> stored = new ArrayList<>();
    /** The rows among {@link #stored} that may be media-group parts. */
    private final Set<Long> parts = new HashSet<>();
    /** The row above which every row the poller stored is in {@link #stored}; unknown until the catch-up read. */
    private long storedAbove = Long.MAX_VALUE;

    /**
     * @param afterScheduling told after each transaction that scheduled something (wakes the handlers)
     * @param executor        shared by every bot's scheduler
     */
    UpdateScheduler(String bot, long botId, ScheduleCheckpoint checkpoint, Runnable afterScheduling, ScheduledExecutorService executor) {
        this.bot = bot;
        this.botId = botId;
        this.checkpoint = checkpoint;
        this.afterScheduling = afterScheduling;
        this.executor = executor;
    }

    long botId() {
        return botId;
    }

    /**
     * The poll lease was just taken, or a batch's commit may have gone through unseen: whatever
     * was stored and not handed over (an earlier holder crashed between its commits; a commit's
     * answer was lost) is read from storage and scheduled first, up to the inbox's highest row.
     */
    synchronized void catchUp(PollLease.Held lease) {
        catchUp = lease;
        stored.clear();
        parts.clear();
        storedAbove = Long.MAX_VALUE;
        submit(0);
    }

    /** The poller committed this batch, and every earlier row of the bot is committed: schedule up to it. */
    synchronized void follow(TelegramUpdateStore.StoredBatch batch) {
        stored.addAll(batch.work(botId));
        parts.addAll(batch.mediaGroupParts());
        if (batch.lastRowId() > through) {
            through = batch.lastRowId();
            submit(0);
        }
    }

    /** Stops after the pass in progress, if any, waiting for it at most 30 s. */
    synchronized void stop() {
        running = false;
        long deadline = System.nanoTime() + STOP_WAIT.toNanos();
        while (inPass && System.nanoTime() < deadline) {
            try {
                wait(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** Guarded by this: at most one pass of this bot submitted or running. */
    private void submit(long delayMillis) {
        if (!running || queued) {
            return;
        }
        queued = true;
        try {
            executor.schedule(this::pass, delayMillis, TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
            queued = false; // the component is stopping: what is left waits in storage for the next lease holder
        }
    }

    private void pass() {
        PollLease.Held lease;
        synchronized (this) {
            if (!running) {
                queued = false;
                return;
            }
            inPass = true;
            lease = catchUp;
        }
        long retryMillis = 0;
        try {
            long target;
            ScheduleCheckpoint.Stored known;
            if (lease != null) {
                Optional<Long> last = checkpoint.lastStoredRow(lease);
                synchronized (this) {
                    last.ifPresent(this::raiseTarget);
                    if (catchUp == lease) {
                        catchUp = null;
                        // Anything stored later under this lease was handed over since it was taken.
                        storedAbove = last.orElse(Long.MAX_VALUE);
                    }
                }
            }
            synchronized (this) {
                target = through;
                known = new ScheduleCheckpoint.Stored(storedAbove, List.copyOf(stored), Set.copyOf(parts));
            }
            long done = checkpoint.scheduleThrough(botId, target, known);
            synchronized (this) {
                reached = done;
                stored.removeIf(w -> w.sourceId() <= done);
                parts.removeIf(row -> row <= done);
            }
            backoff.reset();
            afterScheduling.run();
        } catch (SQLException | RuntimeException e) {
            Duration wait = backoff.next();
            retryMillis = wait.toMillis();
            LOG.warn("telegram bot '{}': scheduling stored updates as work failed; they stay stored above the schedule checkpoint"
                    + " and are scheduled again in {} ms: {}", bot, retryMillis, e.getMessage());
        }
        synchronized (this) {
            inPass = false;
            queued = false;
            notifyAll();
            if (retryMillis > 0) {
                submit(retryMillis);
            } else if (catchUp != null || through > reached) {
                submit(0);
            }
        }
    }

    /** Guarded by this. */
    private void raiseTarget(long rowId) {
        if (rowId > through) {
            through = rowId;
        }
    }
}
