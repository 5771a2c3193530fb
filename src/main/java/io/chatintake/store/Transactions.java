package io.chatintake.store;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/** Work done in one transaction of a pooled connection. */
public final class Transactions {
    /** What runs in the transaction; it must not commit, roll back or keep the connection. */
    @FunctionalInterface
    public interface Work<T> {
        T run(Connection transaction) throws SQLException;
    }

    private Transactions() {
    }

    /** Runs {@code work} in one transaction: committed when it returns, rolled back when it throws. */
    public static <T> T inTransaction(DataSource dataSource, Work<T> work) throws SQLException {
        return run(dataSource, false, work);
    }

    /**
     * {@link #inTransaction}, for writes whose loss only repeats work that is safe to repeat (a
     * claim that vanishes frees its lane, an outcome that vanishes runs its item again, and effects
     * are guarded): its commit returns without waiting for the write-ahead log to reach the disk
     * ({@code synchronous_commit = off}), so it neither waits for an fsync nor makes intake's
     * commits queue behind one. It is visible to everyone at once like any commit; only a crash
     * of the database server within a fraction of a second can lose it, never a crash of ours.
     */
    public static <T> T inRedoableTransaction(DataSource dataSource, Work<T> work) throws SQLException {
        return run(dataSource, true, work);
    }

    private static <T> T run(DataSource dataSource, boolean redoable, Work<T> work) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try {
                if (redoable) {
                    try (Statement s = c.createStatement()) {
                        s.execute("SET LOCAL synchronous_commit = off");
                    }
                }
                T result = work.run(c);
                c.commit();
                return result;
            } catch (SQLException | RuntimeException e) {
                rollback(c, e);
                throw e;
            } finally {
                c.setAutoCommit(true);
            }
        }
    }

    /** A broken connection cannot roll back, and its transaction is gone with it: the first failure is the one to report. */
    private static void rollback(Connection c, Exception cause) {
        try {
            c.rollback();
        } catch (SQLException e) {
            cause.addSuppressed(e);
        }
    }
}
