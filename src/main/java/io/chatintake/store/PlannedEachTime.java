package io.chatintake.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import org.postgresql.PGStatement;

/**
 * Statements whose best plan depends on how many rows a table holds right now. The driver makes a
 * statement it runs often a server-side prepared one, and PostgreSQL then keeps one plan for it: a
 * statement without parameters always, one with parameters once that plan looked no worse than
 * the first few. A plan kept from while the table was small (a fresh database) stays in use after
 * the table grows, scanning all of it until the table is analyzed again. Prepared here, the
 * statement is planned at each execution against the table as it is then; planning a small query
 * costs far less than scanning a grown table.
 * <p>
 * The text is marked: the driver shares one server-side statement among all statements of the
 * same text on a connection, so the plan one of them kept would serve this one too.
 */
public final class PlannedEachTime {
    private PlannedEachTime() {
    }

    public static PreparedStatement prepare(Connection connection, String sql) throws SQLException {
        PreparedStatement statement = connection.prepareStatement("/* planned each time */ " + sql);
        statement.unwrap(PGStatement.class).setPrepareThreshold(0);
        return statement;
    }
}
