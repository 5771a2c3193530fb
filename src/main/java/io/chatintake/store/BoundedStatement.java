package io.chatintake.store;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;

/**
 * The first statement of a transaction with the transaction's {@code statement_timeout} set in
 * the same round trip. A {@code SET LOCAL} of its own cost a round trip per transaction: at one
 * webhook sender, a fifth of a delivery's time waiting on the database. The driver sends both
 * statements of the text before one sync, and the server (14 and later) arms each statement's
 * timer when that statement starts, so the statement after the setting is bounded already; so is
 * every later statement of the transaction. {@code set_config(..., true)} rather than
 * {@code SET LOCAL}: it also bounds a statement that runs without a transaction block (autocommit),
 * where {@code SET LOCAL} logs a warning each time.
 */
public final class BoundedStatement {
    private BoundedStatement() {
    }

    /** {@code sql} (one statement, without a semicolon) preceded by the timeout of its transaction. */
    public static String of(Duration timeout, String sql) {
        if (timeout.toMillis() <= 0) {
            throw new IllegalArgumentException("a statement timeout must be positive, was " + timeout);
        }
        return "SELECT set_config('statement_timeout', '" + timeout.toMillis() + "', true);\n" + sql;
    }

    /** Runs a statement made by {@link #of} and returns the rows of the statement it bounds. */
    public static ResultSet query(PreparedStatement statement) throws SQLException {
        statement.execute();
        if (!statement.getMoreResults()) {
            throw new SQLException("the bounded statement returned no rows");
        }
        return statement.getResultSet();
    }
}
