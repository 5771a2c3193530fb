package io.chatintake.channel.webhook;

import io.chatintake.store.Transactions;
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
 * Group commit: units of work submitted at about the same time run in one transaction, so a
 * burst of N deliveries costs one commit (one WAL flush) instead of N. {@link #submit} returns
 * only after the transaction holding its unit committed, so a caller may answer 2xx on return.
 * <p>
 * A unit that fails is the only one that fails: the transaction is rolled back and the rest of
 * its group runs again without it (units are plain database work, safe to run again in a new
 * transaction). A failure of the transaction itself (connection, commit) fails exactly the
 * units it held, none of which is then stored.
 * <p>
 * A {@link BeforeCommit} step runs once per transaction, after its units, with their results: the
 * place for writes that lock rows of several units (one statement locks them in one order, where
 * units locking one row each would lock them in arrival order and could wait for one another in
 * a circle). When it fails, the units of a group run again one transaction each, so that the
 * failure stays with the unit it belongs to.
 * <p>
 * No thread of its own: a submitter that finds a free slot (at most {@code committers} groups run
 * at once) leads, i.e. runs whatever is queued, its own unit included, on its own thread; the
 * others wait for a leader to commit theirs. So a lone request pays no hand-over between threads
 * (on a busy machine each one costs a scheduling delay), and a burst shares commits.
 */
public final class GroupCommit<T> {
    /** Runs in each transaction after its units, with their results in order; the same rules as a unit. */
    @FunctionalInterface
    public interface BeforeCommit<T> {
        void run(Connection transaction, List<T> results) throws SQLException;
    }

    /** How long a waiting submitter trusts the leaders before it looks whether its unit needs one. */
    private static final Duration LEADER_CHECK = Duration.ofMillis(10);

    private final DataSource dataSource;
    private final Duration statementTimeout;
    private final Duration answerTimeout;
    private final int committers;
    private final int maxGroup;
    private final BeforeCommit<T> beforeCommit;
    private final Queue<Pending<T>> queue = new ConcurrentLinkedQueue<>();
    private final AtomicInteger leading = new AtomicInteger();

    private static final class Pending<T> {
        final Transactions.Work<T> unit;
        final CompletableFuture<T> outcome = new CompletableFuture<>();
        T result;

        Pending(Transactions.Work<T> unit) {
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
    public GroupCommit(DataSource dataSource, Duration statementTimeout, int committers, int maxGroup) {
        this(dataSource, statementTimeout, committers, maxGroup, (transaction, results) -> { });
    }

    /** @param beforeCommit runs in each transaction after its units */
    public GroupCommit(DataSource dataSource, Duration statementTimeout, int committers, int maxGroup, BeforeCommit<T> beforeCommit) {
        this.dataSource = dataSource;
        this.beforeCommit = beforeCommit;
        this.statementTimeout = statementTimeout;
        this.answerTimeout = statementTimeout.multipliedBy(2).plusSeconds(1);
        this.committers = committers;
        this.maxGroup = maxGroup;
    }

    /**
     * Runs the unit in a shared transaction and returns its result once that transaction has
     * committed. Throws when the unit failed, the transaction failed, or no answer came in time
     * (then the unit may still commit later: callers answer "retry", and a retry finds it stored).
     */
    public T submit(Transactions.Work<T> unit) throws SQLException {
        Pending<T> pending = new Pending<>(unit);
        queue.add(pending);
        long deadline = System.nanoTime() + answerTimeout.toNanos();
        while (true) {
            lead(pending);
            try {
                return pending.outcome.get(Math.min(LEADER_CHECK.toNanos(), Math.max(0, deadline - System.nanoTime())), TimeUnit.NANOSECONDS);
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
     * With a free slot, runs queued groups until the caller's own unit is answered. A leader then
     * returns, so a steady stream never holds one request; a unit it leaves queued is taken by the
     * next submitter, or by its own submitter when it looks again ({@link #LEADER_CHECK}).
     */
    private void lead(Pending<T> own) {
        if (queue.isEmpty() || !tryTakeSlot()) {
            return;
        }
        try {
            while (!own.outcome.isDone()) {
                List<Pending<T>> group = nextGroup();
                if (group.isEmpty()) {
                    return;
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

    private List<Pending<T>> nextGroup() {
        List<Pending<T>> group = new ArrayList<>();
        for (Pending<T> next = queue.poll(); next != null; next = group.size() < maxGroup ? queue.poll() : null) {
            group.add(next);
        }
        return group;
    }

    private void runGuarded(List<Pending<T>> group) {
        try {
            if (!runGroup(group)) {
                // The step before commit failed for the group: each unit alone, so it fails only its own.
                for (Pending<T> pending : group) {
                    runGroup(List.of(pending));
                }
            }
        } catch (RuntimeException | Error e) {
            // Never leave a submitter waiting: whatever is not answered yet fails with this.
            group.forEach(p -> p.outcome.completeExceptionally(e));
            if (e instanceof Error error) {
                throw error;
            }
        }
    }

    /**
     * Runs the group in one transaction (again without a unit that fails) and answers its units.
     * @return false when the step before commit failed in a group of several units: none is answered yet
     */
    private boolean runGroup(List<Pending<T>> group) {
        List<Pending<T>> remaining = new ArrayList<>(group);
        while (!remaining.isEmpty()) {
            try (Connection c = dataSource.getConnection()) {
                // Client side too: statement_timeout cannot fire when the server is gone mid-request.
                c.setNetworkTimeout(Runnable::run, (int) answerTimeout.toMillis());
                c.setAutoCommit(false);
                try {
                    try (Statement s = c.createStatement()) {
                        s.execute("SET LOCAL statement_timeout = " + statementTimeout.toMillis());
                    }
                    Pending<T> failed = runUntilFailure(c, remaining);
                    if (failed != null) {
                        rollbackQuietly(c);
                        remaining.remove(failed);
                        continue;
                    }
                    if (!runBeforeCommit(c, remaining)) {
                        return false;
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
        return true;
    }

    /** @return false (rolled back) when the step failed for several units; a lone unit gets the failure */
    private boolean runBeforeCommit(Connection c, List<Pending<T>> units) throws SQLException {
        try {
            beforeCommit.run(c, units.stream().map(p -> p.result).toList());
            return true;
        } catch (SQLException | RuntimeException e) {
            rollbackQuietly(c);
            if (units.size() > 1) {
                return false;
            }
            units.get(0).outcome.completeExceptionally(e);
            units.clear();
            return true;
        }
    }

    /** @return the unit that failed (its submitter has the failure), or null when all ran */
    private static <T> Pending<T> runUntilFailure(Connection c, List<Pending<T>> units) {
        for (Pending<T> pending : units) {
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
