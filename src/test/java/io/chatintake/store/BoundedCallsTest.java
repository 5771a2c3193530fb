package io.chatintake.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.chatintake.config.Settings;
import io.chatintake.testkit.FreezingProxy;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import java.net.URI;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * Every call the pool lends is bounded, as {@link Database} sets it in one place: a statement that
 * runs too long is cancelled by the server, and a connection that answers nothing (a frozen,
 * half-open link) is given up on by the driver, and the pool lends a new one once the link is back.
 * Migrations get their own, longer bound.
 */
class BoundedCallsTest {
    private static final int STATEMENT_SECONDS = 1;
    private static final int SOCKET_SECONDS = 3;

    /** The test database's server, reached through a proxy that can freeze. */
    private static Database open(FreezingProxy proxy) {
        URI jdbc = URI.create(((HikariDataSource) TestDatabase.dataSource()).getJdbcUrl().substring("jdbc:".length()));
        return Database.open(Settings.of(Map.of(
                Database.URL, "jdbc:postgresql://127.0.0.1:" + proxy.port() + jdbc.getPath(),
                Database.USER, EmbeddedDatabase.USER,
                Database.PASSWORD, TestDatabase.password().reveal(),
                Database.POOL_SIZE, "2",
                Database.STATEMENT_TIMEOUT_SECONDS, Integer.toString(STATEMENT_SECONDS),
                Database.SOCKET_TIMEOUT_SECONDS, Integer.toString(SOCKET_SECONDS))));
    }

    private static int port() {
        return URI.create(((HikariDataSource) TestDatabase.dataSource()).getJdbcUrl().substring("jdbc:".length())).getPort();
    }

    private static void execute(DataSource db, String sql) throws SQLException {
        try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    @Test
    void aStatementRunningTooLongIsCancelledByTheServerAtItsTimeout() {
        try (FreezingProxy proxy = FreezingProxy.to(port()); Database database = open(proxy)) {
            long start = System.nanoTime();
            assertThatThrownBy(() -> execute(database.dataSource(), "SELECT pg_sleep(20)"))
                    .isInstanceOf(SQLException.class)
                    .satisfies(e -> assertThat(((SQLException) e).getSQLState()).as("query_canceled").isEqualTo("57014"));
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(STATEMENT_SECONDS + 2));
            assertThat(Sql.string(database.dataSource(), "SHOW statement_timeout")).isEqualTo(STATEMENT_SECONDS + "s");
            assertThat(Sql.string(database.forMigrations(), "SHOW statement_timeout")).as("migrations' own bound").isEqualTo("30min");
        }
    }

    @Test
    void aStatementOnAFrozenConnectionReturnsWithinTheSocketTimeoutAndThePoolReplacesTheConnection() throws Exception {
        try (FreezingProxy proxy = FreezingProxy.to(port()); Database database = open(proxy)) {
            DataSource db = database.dataSource();
            try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
                s.execute("SELECT 1");
                proxy.freeze();
                long start = System.nanoTime();
                assertThatThrownBy(() -> s.execute("SELECT 1")).isInstanceOf(SQLException.class);
                // Bounded, not for ever: the upper margin leaves room for a loaded machine's scheduling.
                assertThat(Duration.ofNanos(System.nanoTime() - start)).as("a statement on a frozen link")
                        .isBetween(Duration.ofSeconds(SOCKET_SECONDS - 1), Duration.ofSeconds(SOCKET_SECONDS + 10));
                assertThat(c.isClosed()).as("the connection given up on").isTrue();
            }
            proxy.thaw();
            assertThat(Sql.count(db, "SELECT 41 + 1")).as("a new connection once the link is back").isEqualTo(42);
            assertThat(Sql.count(db, "SELECT 42")).isEqualTo(42);
        }
    }
}
