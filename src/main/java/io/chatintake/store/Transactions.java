package io.chatintake.store;

import java.sql.Connection;
import java.sql.SQLException;
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
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try {
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
