package io.chatintake.channel.telegram;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Queue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One bot's stored batches waiting for its route, run one after the other in the order stored on
 * a pool every bot shares: a bot whose handlers are busy holds one pool thread, an idle bot none.
 * At most {@link #CAPACITY} batches wait; beyond that a batch is left in the inbox (it is stored).
 */
final class HandoffQueue {
    private static final Logger LOG = LoggerFactory.getLogger(HandoffQueue.class);
    static final int CAPACITY = 16;
    private static final Duration CLOSE_WAIT = Duration.ofSeconds(30);

    private final String bot;
    private final ExecutorService pool;
    // All guarded by this object's monitor.
    private final Queue<Runnable> waiting = new ArrayDeque<>();
    private boolean draining;
    private boolean open = true;

    HandoffQueue(String bot, ExecutorService pool) {
        this.bot = bot;
        this.pool = pool;
    }

    /** @return false when the batch was not taken (full, or closed): it stays in the inbox */
    synchronized boolean offer(Runnable batch) {
        if (!open || waiting.size() >= CAPACITY) {
            return false;
        }
        waiting.add(batch);
        if (!draining) {
            try {
                pool.execute(this::drain);
                draining = true;
            } catch (RejectedExecutionException e) {
                waiting.clear();
                return false;
            }
        }
        return true;
    }

    /** Takes no more batches and waits, at most 30 s, for the one being run. */
    synchronized void close() throws InterruptedException {
        open = false;
        waiting.clear();
        long deadline = System.nanoTime() + CLOSE_WAIT.toNanos();
        while (draining && System.nanoTime() < deadline) {
            wait(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
        }
    }

    private void drain() {
        while (true) {
            Runnable next;
            synchronized (this) {
                next = waiting.poll();
                if (next == null) {
                    draining = false;
                    notifyAll();
                    return;
                }
            }
            try {
                next.run();
            } catch (RuntimeException e) {
                LOG.error("telegram bot '{}': handing stored updates to the route failed; they stay in the inbox", bot, e);
            }
        }
    }
}
