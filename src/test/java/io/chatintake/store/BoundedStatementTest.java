package io.chatintake.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.chatintake.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import javax.sql.DataSource;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(TestDatabase.class)
class BoundedStatementTest {
    private static final String SLEEP_THEN_ANSWER = "SELECT 41 + 1 FROM pg_sleep(?)";

    @Test
    void theStatementReturnsItsRowsAndIsStoppedAtTheTimeoutOnceTheDriverKeepsItPreparedToo(DataSource dataSource) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try (PreparedStatement bounded = bounded(c)) {
                // Past the driver's threshold for a server-side prepared statement, which must not lose the bound.
                for (int run = 0; run < 7; run++) {
                    bounded.setDouble(1, 0);
                    try (ResultSet rs = BoundedStatement.query(bounded)) {
                        assertThat(rs.next()).isTrue();
                        assertThat(rs.getInt(1)).isEqualTo(42);
                    }
                    c.commit();
                }
                bounded.setDouble(1, 5);
                stoppedAtTheTimeout(() -> BoundedStatement.query(bounded));
                c.rollback();
            }
        }
    }

    @Test
    void everyLaterStatementOfTheTransactionIsBoundedAndTheSessionIsNotAfterIt(DataSource dataSource) throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement plain = c.createStatement()) {
            c.setAutoCommit(false);
            String before = show(plain);
            try (PreparedStatement bounded = bounded(c)) {
                bounded.setDouble(1, 0);
                BoundedStatement.query(bounded).close();
            }
            assertThat(show(plain)).isEqualTo("300ms");
            stoppedAtTheTimeout(() -> plain.execute("SELECT pg_sleep(5)"));
            c.rollback();
            assertThat(show(plain)).as("the pool's next user gets the session as it was").isEqualTo(before);
        }
    }

    @Test
    void withoutATransactionBlockTheStatementIsBoundedAsWellWithoutAWarning(DataSource dataSource) throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement plain = c.createStatement()) {
            c.setAutoCommit(true);
            String before = show(plain);
            try (PreparedStatement bounded = bounded(c)) {
                bounded.setDouble(1, 5);
                stoppedAtTheTimeout(() -> BoundedStatement.query(bounded));
                bounded.setDouble(1, 0);
                BoundedStatement.query(bounded).close();
                assertThat((Object) bounded.getWarnings()).as("SET LOCAL outside a transaction block would warn at every statement").isNull();
            }
            assertThat(show(plain)).isEqualTo(before);
        }
    }

    @Test
    void aTimeoutThatBoundsNothingIsRefused() {
        assertThatThrownBy(() -> BoundedStatement.of(Duration.ZERO, SLEEP_THEN_ANSWER)).isInstanceOf(IllegalArgumentException.class);
    }

    private static PreparedStatement bounded(Connection c) throws SQLException {
        return c.prepareStatement(BoundedStatement.of(Duration.ofMillis(300), SLEEP_THEN_ANSWER));
    }

    /** Cancelled by the server at the 300 ms bound, long before the 5 s sleep would end. */
    private static void stoppedAtTheTimeout(ThrowingCallable statement) {
        long started = System.nanoTime();
        assertThatThrownBy(statement).isInstanceOf(SQLException.class).hasMessageContaining("canceling statement due to statement timeout");
        assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(3));
    }

    private static String show(Statement statement) throws SQLException {
        try (ResultSet rs = statement.executeQuery("SHOW statement_timeout")) {
            rs.next();
            return rs.getString(1);
        }
    }
}
