package io.chatintake.album;

import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;

/**
 * Many callers' writes in one transaction, without a caller waiting for it: each gets a future
 * completed by the commit that holds its write, and whoever finds a writer's place free writes
 * everything queued meanwhile (a few writers at once, so one batch's commit does not hold up the
 * next). The Aggregator hands each completed album to the route on its own; one commit (and one
 * disk flush) per album could not keep up with hundreds of albums falling due each second, and a
 * thread per album waiting for its commit would bound a commit to the threads there are.
 */
final class GroupCommit<T, R> {
    /** Writes a batch in one transaction; the results are in the order of the requests. */
    @FunctionalInterface
    interface BatchWriter<T, R> {
        List<R> write(List<T> requests) throws SQLException;
    }

    private record Pending<T, R>(T request, CompletableFuture<R> result) {
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

    /** @return this request's result, completed once committed (exceptionally if its batch failed) */
    CompletableFuture<R> submit(T request) {
        Pending<T, R> pending = new Pending<>(request, new CompletableFuture<>());
        queued.add(pending);
        writeWhileQueued();
        return pending.result();
    }

    /**
     * Writes batches while some are queued and a writer's place is free. A writer looks at the
     * queue again after leaving its place, so a request queued while every place was taken is
     * written by whoever leaves one next.
     */
    private void writeWhileQueued() {
        while (!queued.isEmpty() && writers.tryAcquire()) {
            List<Pending<T, R>> batch = new ArrayList<>();
            List<R> results = null;
            Exception failure = null;
            try {
                for (Pending<T, R> p; batch.size() < maxBatch && (p = queued.poll()) != null; ) {
                    batch.add(p);
                }
                if (!batch.isEmpty()) {
                    results = writer.write(batch.stream().map(Pending::request).toList());
                }
            } catch (SQLException | RuntimeException e) {
                failure = e;
            } finally {
                writers.release();
            }
            // Completed outside the writer's place: what runs on a result does not hold up the next batch.
            for (int i = 0; i < batch.size(); i++) {
                if (failure != null) {
                    batch.get(i).result().completeExceptionally(failure);
                } else {
                    batch.get(i).result().complete(results.get(i));
                }
            }
        }
    }
}
