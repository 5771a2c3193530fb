package io.chatintake.channel.webhook;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLTimeoutException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;

/**
 * Group commit: inputs submitted at about the same time are written by one call of the
 * {@link GroupWork} in one transaction, so a burst of N deliveries costs one commit (one WAL
 * flush) and a few set-based statements instead of N of each. {@link #submit} returns only after
 * the transaction holding its input committed, so a caller may answer 2xx on return.
 * <p>
 * An input that fails is the only one that fails: when the work fails for a group of several,
 * the transaction is rolled back and each input of the group runs again in a transaction of its
 * own (the work is plain database work, safe to run again). A failure of the transaction itself
 * (connection, commit) fails exactly the inputs it held, none of which is then stored.
 * <p>
 * No thread of its own: a submitter that finds a free slot (at most {@code committers} groups run
 * at once) leads, i.e. runs whatever is queued, its own input included, on its own thread; the
 * others wait for a leader to commit theirs. So a lone request pays no hand-over between threads
 * (on a busy machine each one costs a scheduling delay), and a burst shares commits.
 */
public final class GroupCommit<I, O> {
    /**
     * Writes a group of inputs in the caller's transaction and returns one result per input, in
     * order. Called with a group of one to tell which input fails, so it must not commit, roll
     * back or keep the connection.
     */
    @FunctionalInterface
    public interface GroupWork<I, O> {
        List<O> run(Connection transaction, List<I> inputs) throws SQLException;
    }

    /** How long a waiting submitter trusts the leaders before it looks whether its input needs one. */
    private static final Duration LEADER_CHECK = Duration.ofMillis(10);

    private final DataSource dataSource;
    private final Duration statementTimeout;
    private final Duration answerTimeout;
    private final int committers;
    private final int maxGroup;
    private final GroupWork<I, O> work;
    private final Runnable crowded;
    private final Queue<Pending<I, O>> queue = new ConcurrentLinkedQueue<>();
    private final AtomicInteger leading = new AtomicInteger();

    private record Pending<I, O>(I input, CompletableFuture<O> outcome) {
        Pending(I input) {
            this(input, new CompletableFuture<>());
        }
    }

    /**
     * @param statementTimeout bound on each statement; a submitter waits at most twice this (plus a second) for its answer
     * @param committers groups that may run at once (each holds one connection while it runs)
     * @param maxGroup inputs at most in one transaction
     * @param crowded told whenever inputs had to queue for a transaction (a group of several): callers come faster than
     *                one commit at a time, so work that can wait should
     */
    public GroupCommit(DataSource dataSource, Duration statementTimeout, int committers, int maxGroup, GroupWork<I, O> work,
                       Runnable crowded) {
        this.dataSource = dataSource;
        this.work = work;
        this.crowded = crowded;
        this.statementTimeout = statementTimeout;
        this.answerTimeout = statementTimeout.multipliedBy(2).plusSeconds(1);
        this.committers = committers;
        this.maxGroup = maxGroup;
    }

    /**
     * Writes the input in a shared transaction and returns its result once that transaction has
     * committed. Throws when its write failed, the transaction failed, or no answer came in time
     * (then it may still commit later: callers answer "retry", and a retry finds it stored).
     */
    public O submit(I input) throws SQLException {
        Pending<I, O> pending = new Pending<>(input);
        queue.add(pending);
        long deadline = System.nanoTime() + answerTimeout.toNanos();
        while (true) {
            lead(pending);
            try {
                return pending.outcome().get(Math.min(LEADER_CHECK.toNanos(), Math.max(0, deadline - System.nanoTime())), TimeUnit.NANOSECONDS);
            } catch (ExecutionException e) {
                if (e.getCause() instanceof SQLException sql) {
                    throw sql;
                }
                if (e.getCause() instanceof RuntimeException runtime) {
                    throw runtime;
                }
                throw new IllegalStateException(e.getCause());
            } catch (TimeoutException e) {
                if (System.nanoTime() - deadline >= 0) {
                    throw new SQLTimeoutException("no commit within " + answerTimeout.toMillis() + " ms; outcome unknown", "57014");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new SQLException("interrupted while waiting for the commit; outcome unknown", "57014");
            }
        }
    }

    /**
     * With a free slot, runs queued groups until the caller's own input is answered. A leader then
     * returns, so a steady stream never holds one request; an input it leaves queued is taken by
     * the next submitter, or by its own submitter when it looks again ({@link #LEADER_CHECK}).
     */
    private void lead(Pending<I, O> own) {
        if (queue.isEmpty() || !tryTakeSlot()) {
            return;
        }
        try {
            while (!own.outcome().isDone()) {
                List<Pending<I, O>> group = nextGroup();
                if (group.isEmpty()) {
                    return;
                }
                if (group.size() > 1) {
                    crowded.run();
                }
                runGuarded(group);
            }
        } finally {
            leading.decrementAndGet();
        }
    }

    private boolean tryTakeSlot() {
        for (int now = leading.get(); now < committers; now = leading.get()) {
            if (leading.compareAndSet(now, now + 1)) {
                return true;
            }
        }
        return false;
    }

    private List<Pending<I, O>> nextGroup() {
        List<Pending<I, O>> group = new ArrayList<>();
        for (Pending<I, O> next = queue.poll(); next != null; next = group.size() < maxGroup ? queue.poll() : null) {
            group.add(next);
        }
        return group;
    }

    private void runGuarded(List<Pending<I, O>> group) {
        try {
            if (!runGroup(group)) {
                // The work failed for the group: each input alone, so a failure stays with its own input.
                for (Pending<I, O> pending : group) {
                    runGroup(List.of(pending));
                }
            }
        } catch (RuntimeException | Error e) {
            // Never leave a submitter waiting: whatever is not answered yet fails with this.
            group.forEach(p -> p.outcome().completeExceptionally(e));
            if (e instanceof Error error) {
                throw error;
            }
        }
    }

    /**
     * Runs the group in one transaction and answers its inputs.
     * @return false when the work failed for a group of several on a sound connection: none is answered yet
     */
    private boolean runGroup(List<Pending<I, O>> group) {
        try (Connection c = dataSource.getConnection()) {
            // Client side too: statement_timeout cannot fire when the server is gone mid-request.
            c.setNetworkTimeout(Runnable::run, (int) answerTimeout.toMillis());
            c.setAutoCommit(false);
            List<O> results;
            try {
                try (Statement s = c.createStatement()) {
                    s.execute("SET LOCAL statement_timeout = " + statementTimeout.toMillis());
                }
                try {
                    results = work.run(c, group.stream().map(Pending::input).toList());
                    if (results.size() != group.size()) {
                        throw new IllegalStateException(results.size() + " results for " + group.size() + " inputs");
                    }
                } catch (SQLException | RuntimeException e) {
                    rollbackQuietly(c);
                    if (group.size() > 1 && !c.isClosed()) {
                        return false;
                    }
                    group.get(0).outcome().completeExceptionally(e);
                    return true;
                }
                c.commit();
            } catch (SQLException | RuntimeException e) {
                rollbackQuietly(c);
                throw e;
            }
            for (int i = 0; i < group.size(); i++) {
                group.get(i).outcome().complete(results.get(i));
            }
        } catch (SQLException e) {
            // The transaction itself failed (connection, setup or commit): it held all of these, none is stored.
            group.forEach(p -> p.outcome().completeExceptionally(e));
        }
        return true;
    }

    private static void rollbackQuietly(Connection c) {
        try {
            c.rollback();
        } catch (SQLException e) {
            // The connection is broken; the transaction died with it, nothing was committed.
        }
    }
}
