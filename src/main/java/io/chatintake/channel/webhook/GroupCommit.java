package io.chatintake.channel.webhook;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLTimeoutException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.sql.DataSource;

/**
 * Group commit: units of work submitted at about the same time run in one transaction, so a
 * burst of N deliveries costs one commit (one WAL flush) instead of N. {@link #submit} returns
 * only after the transaction holding its unit committed, so a caller may answer 2xx on return.
 * <p>
 * A unit that fails is the only one that fails: the transaction is rolled back and the rest of
 * its group runs again without it (units are plain database work, safe to run again in a new
 * transaction). A failure of the transaction itself (connection, commit) fails exactly the
 * units it held, none of which is then stored. A few committer threads run groups side by side,
 * so one slow group does not hold up the next.
 */
public final class GroupCommit implements AutoCloseable {
    /** A unit of work in the caller's transaction; it must not commit, roll back or keep the connection. */
    @FunctionalInterface
    public interface Unit<T> {
        T run(Connection transaction) throws SQLException;
    }

    private static final Duration IDLE_POLL = Duration.ofMillis(200);

    private final DataSource dataSource;
    private final Duration statementTimeout;
    private final Duration answerTimeout;
    private final int maxGroup;
    private final BlockingQueue<Pending<?>> queue = new LinkedBlockingQueue<>();
    private final List<Thread> committers = new ArrayList<>();
    private volatile boolean running = true;

    private static final class Pending<T> {
        final Unit<T> unit;
        final CompletableFuture<T> outcome = new CompletableFuture<>();
        T result;

        Pending(Unit<T> unit) {
            this.unit = unit;
        }

        void runIn(Connection c) throws SQLException {
            result = unit.run(c);
        }

        void committed() {
            outcome.complete(result);
        }
    }

    /**
     * @param statementTimeout bound on each statement; a submitter waits at most twice this (plus a second) for its answer
     * @param committers groups that may run at once (each holds one connection while it runs)
     * @param maxGroup units at most in one transaction
     */
    public GroupCommit(DataSource dataSource, Duration statementTimeout, int committers, int maxGroup, String name) {
        this.dataSource = dataSource;
        this.statementTimeout = statementTimeout;
        this.answerTimeout = statementTimeout.multipliedBy(2).plusSeconds(1);
        this.maxGroup = maxGroup;
        for (int i = 0; i < committers; i++) {
            Thread thread = new Thread(this::commitLoop, name + "-group-commit-" + i);
            thread.setDaemon(true);
            this.committers.add(thread);
            thread.start();
        }
    }

    /**
     * Runs the unit in a shared transaction and returns its result once that transaction has
     * committed. Throws when the unit failed, the transaction failed, or no answer came in time
     * (then the unit may still commit later: callers answer "retry", and a retry finds it stored).
     */
    public <T> T submit(Unit<T> unit) throws SQLException {
        Pending<T> pending = new Pending<>(unit);
        if (!running) {
            throw new SQLException("stopping: not accepting new work, nothing stored", "57P01");
        }
        queue.add(pending);
        try {
            return pending.outcome.get(answerTimeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof SQLException sql) {
                throw sql;
            }
            if (e.getCause() instanceof RuntimeException runtime) {
                throw runtime;
            }
            throw new IllegalStateException(e.getCause());
        } catch (TimeoutException e) {
            throw new SQLTimeoutException("no commit within " + answerTimeout.toMillis() + " ms; outcome unknown", "57014");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SQLException("interrupted while waiting for the commit; outcome unknown", "57014");
        }
    }

    /** Lets queued units finish, then stops the committers. */
    @Override
    public void close() {
        running = false;
        for (Thread committer : committers) {
            try {
                committer.join(answerTimeout.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private void commitLoop() {
        while (running || !queue.isEmpty()) {
            Pending<?> first;
            try {
                first = queue.poll(IDLE_POLL.toMillis(), TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                return;
            }
            if (first == null) {
                continue;
            }
            List<Pending<?>> group = new ArrayList<>(maxGroup);
            group.add(first);
            queue.drainTo(group, maxGroup - 1);
            try {
                runGroup(group);
            } catch (RuntimeException | Error e) {
                // Never leave a submitter waiting: whatever is not answered yet fails with this.
                group.forEach(p -> p.outcome.completeExceptionally(e));
                if (e instanceof Error error) {
                    throw error;
                }
            }
        }
    }

    private void runGroup(List<Pending<?>> group) {
        List<Pending<?>> remaining = new ArrayList<>(group);
        while (!remaining.isEmpty()) {
            try (Connection c = dataSource.getConnection()) {
                // Client side too: statement_timeout cannot fire when the server is gone mid-request.
                c.setNetworkTimeout(Runnable::run, (int) answerTimeout.toMillis());
                c.setAutoCommit(false);
                try {
                    try (Statement s = c.createStatement()) {
                        s.execute("SET LOCAL statement_timeout = " + statementTimeout.toMillis());
                    }
                    Pending<?> failed = runUntilFailure(c, remaining);
                    if (failed != null) {
                        rollbackQuietly(c);
                        remaining.remove(failed);
                        continue;
                    }
                    c.commit();
                } catch (SQLException | RuntimeException e) {
                    rollbackQuietly(c);
                    throw e;
                }
                remaining.forEach(Pending::committed);
                remaining.clear();
            } catch (SQLException e) {
                // The transaction itself failed (connection, setup or commit): it held all of these, none is stored.
                remaining.forEach(p -> p.outcome.completeExceptionally(e));
                remaining.clear();
            }
        }
    }

    /** @return the unit that failed (its submitter has the failure), or null when all ran */
    private static Pending<?> runUntilFailure(Connection c, List<Pending<?>> units) {
        for (Pending<?> pending : units) {
            try {
                pending.runIn(c);
            } catch (SQLException | RuntimeException e) {
                pending.outcome.completeExceptionally(e);
                return pending;
            }
        }
        return null;
    }

    private static void rollbackQuietly(Connection c) {
        try {
            c.rollback();
        } catch (SQLException e) {
            // The connection is broken; the transaction died with it, nothing was committed.
        }
    }
}
