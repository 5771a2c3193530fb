package io.chatintake.channel.telegram;

import io.chatintake.work.Backoff;
import io.chatintake.work.SchedulingThread;
import java.sql.SQLException;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The thread that turns one bot's stored updates into work right behind its poller
 * ({@link ScheduleCheckpoint}): the poller says which row it stored last and goes on to its next
 * getUpdates at once; this thread schedules everything up to there, however many batches that
 * has become meanwhile, and then tells the handlers. When the database fails it tries again with
 * backoff, and nothing is lost meanwhile: the rows wait above the mark, in storage. Rows a stop
 * leaves above the mark are scheduled by whoever takes the poll lease next, this process included.
 */
final class UpdateScheduler extends SchedulingThread {
    private static final Logger LOG = LoggerFactory.getLogger(UpdateScheduler.class);

    private final String bot;
    private final long botId;
    private final ScheduleCheckpoint checkpoint;
    private final Runnable afterScheduling;
    private final Backoff backoff = new Backoff(Duration.ofMillis(100), Duration.ofSeconds(5));
    private long through;
    private long reached;
    private PollLease.Held catchUp;

    /** @param afterScheduling told after each transaction that scheduled something (wakes the handlers) */
    UpdateScheduler(String bot, long botId, ScheduleCheckpoint checkpoint, Runnable afterScheduling) {
        super("telegram-inbox-" + bot + "-scheduler");
        this.bot = bot;
        this.botId = botId;
        this.checkpoint = checkpoint;
        this.afterScheduling = afterScheduling;
        start();
    }

    long botId() {
        return botId;
    }

    /**
     * The poll lease was just taken: whatever an earlier holder stored and did not schedule (it
     * crashed between its commits) is scheduled first, up to the inbox's highest row.
     */
    synchronized void catchUp(PollLease.Held lease) {
        catchUp = lease;
        notifyAll();
    }

    /** Row {@code rowId} and every earlier row of the bot are committed: schedule up to it. */
    synchronized void follow(long rowId) {
        if (rowId > through) {
            through = rowId;
            notifyAll();
        }
    }

    @Override
    protected void loop() {
        while (true) {
            long target;
            PollLease.Held lease;
            synchronized (this) {
                while (running && catchUp == null && through <= reached) {
                    waitQuietly(0);
                }
                if (!running) {
                    return;
                }
                lease = catchUp;
                target = through;
            }
            try {
                if (lease != null) {
                    checkpoint.lastStoredRow(lease).ifPresent(this::follow);
                    synchronized (this) {
                        if (catchUp == lease) {
                            catchUp = null;
                        }
                        target = through;
                    }
                }
                reached = checkpoint.scheduleThrough(botId, target);
                backoff.reset();
                afterScheduling.run();
            } catch (SQLException | RuntimeException e) {
                Duration wait = backoff.next();
                LOG.warn("telegram bot '{}': scheduling stored updates as work failed; they stay stored above the schedule checkpoint"
                        + " and are scheduled again in {} ms: {}", bot, wait.toMillis(), e.getMessage());
                synchronized (this) {
                    if (running) {
                        waitQuietly(wait.toMillis());
                    }
                }
            }
        }
    }

}
