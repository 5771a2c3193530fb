package io.chatintake.store;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Predicate;
import javax.sql.DataSource;

/**
 * Group commit: inputs submitted at about the same time are written by one call of the
 * {@link GroupWork} in one transaction, so a burst of N deliveries costs one commit (one WAL
 * flush) and a few set-based statements instead of N of each. {@link #submit} returns only after
 * the transaction holding its input committed, so a caller may answer 2xx on return;
 * {@link #submitAsync} returns a future that commit completes. A group whose work is one
 * statement needs no transaction around it: its statement commits by itself, one round trip in
 * all instead of the statement's and a COMMIT's.
 * <p>
 * An input that fails is the only one that fails: when the work fails for a group of several,
 * the transaction is rolled back and each input of the group runs again in a transaction of its
 * own (the work is plain database work, safe to run again). A failure of the transaction itself
 * (connection, commit) fails exactly the inputs it held, none of which is then stored.
 * <p>
 * No thread of its own: a submitter that finds a free slot (at most {@code committers} groups run
 * at once) leads, i.e. runs whatever is queued, its own input included, on its own thread. So a
 * lone request pays no hand-over between threads (on a busy machine each one costs a scheduling
 * delay), and a burst shares commits. The others either wait for a leader to commit theirs
 * ({@link #submit}), or go on at once with a future that the commit completes
 * ({@link #submitAsync}): a thread that must never wait for another's commit, such as one the
 * Aggregator hands completions to, cannot be held by a stream of groups it does not lead.
 */
public final class GroupCommit<I, O> {
    /**
     * Writes a group of inputs in the transaction GroupCommit gives it and returns one result per
     * input, in order. Called with a group of one to tell which input fails, so it must not commit,
     * roll back or keep the connection. For submitters that wait, it bounds its statements by the
     * statement timeout it was given, with its first statement ({@link BoundedStatement}): a
     * statement of the transaction's own would cost a round trip.
     */
    @FunctionalInterface
    public interface GroupWork<I, O> {
        List<O> run(Connection transaction, List<I> inputs) throws SQLException;
    }

    /** How long a waiting submitter trusts the leaders before it looks whether its input needs one. */
    private static final Duration LEADER_CHECK = Duration.ofMillis(10);

    private final DataSource dataSource;
    private final Duration answerTimeout;
    private final int committers;
    private final int maxGroup;
    private final GroupWork<I, O> work;
    private final Predicate<List<I>> oneStatement;
    private final Runnable crowded;
    private final Duration leaderCheck;
    private final Queue<Pending<I, O>> queue = new ConcurrentLinkedQueue<>();
    private final AtomicInteger leading = new AtomicInteger();

    /**
     * An input, its submitter and, once its group ran, its outcome. A waiting submitter parks
     * until the input is answered, a departing leader nudges it to lead (the slot is free and it
     * is queued), or it is time to look ({@link #LEADER_CHECK}); parking rather than a future's
     * timed get, which throws (and fills the stack trace of) a TimeoutException at every look. An
     * input submitted asynchronously has a future instead, completed by whoever ran its group once
     * that one has left its slot ({@link #deliver}).
     */
    private static final class Pending<I, O> {
        private final I input;
        /** Null when submitted asynchronously: nobody waits for the answer. */
        private final Thread submitter;
        /** Null when submitted to wait: the submitter reads the answer itself. */
        private final CompletableFuture<O> future;
        private volatile boolean answered;
        private volatile boolean nudged;
        private O result;
        private Throwable failure;

        private Pending(I input, Thread submitter, CompletableFuture<O> future) {
            this.input = input;
            this.submitter = submitter;
            this.future = future;
        }

        static <I, O> Pending<I, O> waiting(I input) {
            return new Pending<>(input, Thread.currentThread(), null);
        }

        static <I, O> Pending<I, O> async(I input) {
            return new Pending<>(input, null, new CompletableFuture<>());
        }

        I input() {
            return input;
        }

        /** Only the group's leader answers an input, once; a later answer (a failure after success) is ignored. */
        void succeed(O value) {
            if (!answered) {
                result = value;
                answered = true;
                LockSupport.unpark(submitter);
            }
        }

        void fail(Throwable cause) {
            if (!answered) {
                failure = cause;
                answered = true;
                LockSupport.unpark(submitter);
            }
        }

        /** Completes the future of an input submitted asynchronously, with the answer its group gave. */
        void deliver() {
            if (future != null && answered) {
                if (failure == null) {
                    future.complete(result);
                } else {
                    future.completeExceptionally(failure);
                }
            }
        }

        boolean isAnswered() {
            return answered;
        }

        void nudge() {
            if (submitter != null) {
                nudged = true;
                LockSupport.unpark(submitter);
            }
        }

        /** Waits at most this long. @return whether answered (false: time to look, or nudged to) */
        boolean await(long nanos) throws InterruptedException {
            long until = System.nanoTime() + nanos;
            for (long left = nanos; !answered && !nudged && left > 0; left = until - System.nanoTime()) {
                LockSupport.parkNanos(this, left);
                if (Thread.interrupted()) {
                    throw new InterruptedException();
                }
            }
            nudged = false;
            return answered;
        }
    }

    /**
     * @param statementTimeout the bound the work puts on each of its statements; a submitter waits at most twice this
     *                         (plus a second) for its answer, and a connection that answers nothing for as long is given up
     * @param committers groups that may run at once (each holds one connection while it runs)
     * @param maxGroup inputs at most in one transaction
     * @param oneStatement groups of inputs whose work is a single statement: such a group needs no transaction around it
     *                     (its statement commits as it ends, in the round trip that sent it, with no COMMIT after)
     * @param crowded told whenever inputs had to queue for a transaction (a group of several): callers come faster than
     *                one commit at a time, so work that can wait should
     */
    public GroupCommit(DataSource dataSource, Duration statementTimeout, int committers, int maxGroup, GroupWork<I, O> work,
                       Predicate<List<I>> oneStatement, Runnable crowded) {
        this(dataSource, statementTimeout, committers, maxGroup, work, oneStatement, crowded, LEADER_CHECK);
    }

    /**
     * For submitters that do not wait ({@link #submitAsync}; the other constructor's wait,
     * {@link #submit}): the work's statements are bounded by the pool's statement and socket
     * timeouts, and nobody waits for an answer, so there is no answer to bound.
     */
    public GroupCommit(DataSource dataSource, int committers, int maxGroup, GroupWork<I, O> work, Predicate<List<I>> oneStatement) {
        this(dataSource, null, committers, maxGroup, work, oneStatement, () -> { }, LEADER_CHECK);
    }

    /** @param leaderCheck how long a waiting submitter trusts the leaders ({@link #LEADER_CHECK}; tests stretch it) */
    GroupCommit(DataSource dataSource, Duration statementTimeout, int committers, int maxGroup, GroupWork<I, O> work,
                Predicate<List<I>> oneStatement, Runnable crowded, Duration leaderCheck) {
        this.leaderCheck = leaderCheck;
        this.dataSource = dataSource;
        this.work = work;
        this.oneStatement = oneStatement;
        this.crowded = crowded;
        this.answerTimeout = statementTimeout == null ? null : statementTimeout.multipliedBy(2).plusSeconds(1);
        this.committers = committers;
        this.maxGroup = maxGroup;
    }

    /**
     * Writes the input in a shared transaction and returns its result once that transaction has
     * committed. Throws when its write failed, the transaction failed, or no answer came in time
     * (then it may still commit later: callers answer "retry", and a retry finds it stored).
     */
    public O submit(I input) throws SQLException {
        if (answerTimeout == null) {
            throw new IllegalStateException("built for submitters that do not wait, with no bound on a wait: submitAsync only");
        }
        Pending<I, O> pending = Pending.waiting(input);
        queue.add(pending);
        long deadline = System.nanoTime() + answerTimeout.toNanos();
        while (true) {
            lead(pending);
            try {
                if (pending.await(Math.min(leaderCheck.toNanos(), Math.max(0, deadline - System.nanoTime())))) {
                    return outcomeOf(pending);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new SQLException("interrupted while waiting for the commit; outcome unknown", "57014");
            }
            if (System.nanoTime() - deadline >= 0) {
                throw new SQLTimeoutException("no commit within " + answerTimeout.toMillis() + " ms; outcome unknown", "57014");
            }
        }
    }

    /**
     * Queues the input and returns at once: the future is completed once the transaction holding
     * the input committed (exceptionally when its write or its transaction failed). A caller that
     * finds a free slot writes what is queued, its own input included, before it returns; it
     * never waits for a group it does not run. Whatever depends on the future runs on the thread
     * that ran the group, after that one has left its slot, so it does not hold up the next group.
     */
    public CompletableFuture<O> submitAsync(I input) {
        if (answerTimeout != null) {
            // A leader of waiting submitters leaves once its own input is answered: an input queued
            // behind it without a waiting submitter would be left for nobody to write.
            throw new IllegalStateException("built for submitters that wait: submit only");
        }
        Pending<I, O> pending = Pending.async(input);
        queue.add(pending);
        // Looks at the queue again after leaving the slot: an input queued while every slot was
        // taken is written by whoever leaves one next.
        while (!queue.isEmpty() && tryTakeSlot()) {
            List<Pending<I, O>> group = List.of();
            try {
                group = nextGroup();
                runGroupOf(group);
            } finally {
                leave();
                group.forEach(Pending::deliver);
            }
        }
        return pending.future;
    }

    private static <O> O outcomeOf(Pending<?, O> answered) throws SQLException {
        Throwable failure = answered.failure;
        if (failure == null) {
            return answered.result;
        }
        if (failure instanceof SQLException sql) {
            throw sql;
        }
        if (failure instanceof RuntimeException runtime) {
            throw runtime;
        }
        throw new IllegalStateException(failure);
    }

    /**
     * With a free slot, runs queued groups until the caller's own input is answered. A leader then
     * returns, so a steady stream never holds one request, and nudges the submitter of the input
     * it leaves first in the queue to lead next: waiting for the next submitter to arrive, or for
     * that one to look again ({@link #LEADER_CHECK}), left a slot idle while deliveries queued.
     */
    private void lead(Pending<I, O> own) {
        if (queue.isEmpty() || !tryTakeSlot()) {
            return;
        }
        try {
            while (!own.isAnswered()) {
                List<Pending<I, O>> group = nextGroup();
                if (group.isEmpty()) {
                    return;
                }
                runGroupOf(group);
            }
        } finally {
            leave();
        }
    }

    private void runGroupOf(List<Pending<I, O>> group) {
        if (group.size() > 1) {
            crowded.run();
        }
        if (!group.isEmpty()) {
            runGuarded(group);
        }
    }

    /** Frees the slot and nudges the first queued submitter to lead: nobody else may come to run its group. */
    private void leave() {
        leading.decrementAndGet();
        Pending<I, O> next = queue.peek();
        if (next != null) {
            next.nudge();
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
            group.forEach(p -> p.fail(e));
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
        List<I> inputs = group.stream().map(Pending::input).toList();
        boolean selfCommitting = oneStatement.test(inputs);
        try (Connection c = dataSource.getConnection()) {
            if (answerTimeout != null) {
                // Client side too: statement_timeout cannot fire when the server is gone mid-request.
                c.setNetworkTimeout(Runnable::run, (int) answerTimeout.toMillis());
            }
            c.setAutoCommit(selfCommitting);
            List<O> results;
            try {
                try {
                    results = work.run(c, inputs);
                    if (results.size() != group.size()) {
                        throw new IllegalStateException(results.size() + " results for " + group.size() + " inputs");
                    }
                } catch (SQLException | RuntimeException e) {
                    rollbackQuietly(c);
                    if (group.size() > 1 && !c.isClosed()) {
                        return false;
                    }
                    group.get(0).fail(e);
                    return true;
                }
                if (!selfCommitting) {
                    c.commit();
                }
            } catch (SQLException | RuntimeException e) {
                rollbackQuietly(c);
                throw e;
            }
            for (int i = 0; i < group.size(); i++) {
                group.get(i).succeed(results.get(i));
            }
        } catch (SQLException e) {
            // The transaction itself failed (connection, setup or commit): it held all of these, none is stored.
            group.forEach(p -> p.fail(e));
        }
        return true;
    }

    private static void rollbackQuietly(Connection c) {
        try {
            if (!c.getAutoCommit()) {
                c.rollback();
            }
        } catch (SQLException e) {
            // The connection is broken; the transaction died with it, nothing was committed.
        }
    }
}
