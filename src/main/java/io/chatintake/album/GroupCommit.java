package io.chatintake.album;

import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;

/**
 * Many callers' writes in one transaction: each caller waits until the commit that holds its own,
 * and whoever finds a writer's place free writes everything queued meanwhile (a few writers at
 * once, so one batch's commit does not hold up the next). The Aggregator hands
 * each completed album to the route on its own; one commit (and one disk flush) per album could
 * not keep up with hundreds of albums falling due each second.
 */
final class GroupCommit<T, R> {
    /** Writes a batch in one transaction; the results are in the order of the requests. */
    @FunctionalInterface
    interface BatchWriter<T, R> {
        List<R> write(List<T> requests) throws SQLException;
    }

    private static final class Pending<T, R> {
        final T request;
        R result;
        Exception failure;
        volatile boolean done;

        Pending(T request) {
            this.request = request;
        }
    }

    private final int maxBatch;
    private final BatchWriter<T, R> writer;
    private final ConcurrentLinkedQueue<Pending<T, R>> queued = new ConcurrentLinkedQueue<>();
    private final Semaphore writers;

    GroupCommit(int writers, int maxBatch, BatchWriter<T, R> writer) {
        this.writers = new Semaphore(writers);
        this.maxBatch = maxBatch;
        this.writer = writer;
    }

    /** @return this request's result, once committed */
    R submit(T request) throws SQLException {
        Pending<T, R> pending = new Pending<>(request);
        queued.add(pending);
        while (!pending.done) {
            writers.acquireUninterruptibly();
            try {
                if (!pending.done) {
                    writeQueued();
                }
            } finally {
                writers.release();
            }
        }
        if (pending.failure instanceof SQLException e) {
            throw new SQLException(e.getMessage(), e.getSQLState(), e);
        }
        if (pending.failure != null) {
            throw new IllegalStateException(pending.failure.getMessage(), pending.failure);
        }
        return pending.result;
    }

    private void writeQueued() {
        List<Pending<T, R>> batch = new ArrayList<>();
        for (Pending<T, R> p; batch.size() < maxBatch && (p = queued.poll()) != null; ) {
            batch.add(p);
        }
        try {
            List<R> results = writer.write(batch.stream().map(p -> p.request).toList());
            for (int i = 0; i < batch.size(); i++) {
                batch.get(i).result = results.get(i);
            }
        } catch (SQLException | RuntimeException e) {
            batch.forEach(p -> p.failure = e);
        } finally {
            batch.forEach(p -> p.done = true);
        }
    }
}
