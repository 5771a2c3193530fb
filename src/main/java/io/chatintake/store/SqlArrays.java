package io.chatintake.store;

import java.sql.Array;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.List;
import java.util.function.Function;

/** Columns of many rows as array parameters, for statements that write the rows at once ({@code unnest}). */
public final class SqlArrays {
    private SqlArrays() {
    }

    /**
     * One text column of the rows. As a {@code String[]} the driver sends it in binary, so neither
     * side escapes or parses an array literal (bodies of a kilobyte make that a real cost per row).
     */
    public static <T> Array texts(Connection connection, List<T> rows, Function<T, String> column) throws SQLException {
        return connection.createArrayOf("text", fill(new String[rows.size()], rows, column));
    }

    /** One bytea column of the rows. */
    public static <T> Array bytes(Connection connection, List<T> rows, Function<T, byte[]> column) throws SQLException {
        return connection.createArrayOf("bytea", fill(new byte[rows.size()][], rows, column));
    }

    /** {@code values}, one per row, filled with the rows' column (a plain loop: this runs for every delivery). */
    private static <T, V> V[] fill(V[] values, List<T> rows, Function<T, V> column) {
        for (int i = 0; i < values.length; i++) {
            values[i] = column.apply(rows.get(i));
        }
        return values;
    }

    /** An instant as PostgreSQL reads a timestamptz (ISO 8601, UTC), for a text column cast in SQL; null stays null. */
    public static String timestamp(Instant instant) {
        return instant == null ? null : instant.toString();
    }
}
