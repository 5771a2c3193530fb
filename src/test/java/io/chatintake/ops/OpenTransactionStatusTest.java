package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.chatintake.config.Settings;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.Properties;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A session left idle in transaction, as a person's psql or a tool leaves one: once its
 * transaction is older than chat-intake.db.open-transaction-warn-seconds the status page names its
 * backend (pid, application, state, age) among what needs attention, and no longer once it ends.
 */
@ExtendWith(TestDatabase.class)
class OpenTransactionStatusTest {

    @Test
    void aSessionIdleInTransactionIsNamedOnTheStatusPageUntilItEnds(DataSource db) throws Exception {
        StatusReport report = new StatusReport(db, Settings.of(Map.of("chat-intake.db.open-transaction-warn-seconds", "2")),
                Duration.ofSeconds(10), "test", Set::of);
        try (Connection left = leftOpen(db)) {
            long pid;
            try (Statement st = left.createStatement(); ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
                rs.next();
                pid = rs.getLong(1);
            }
            String named = "database: backend " + pid + " (application &#39;left-open&#39;, idle in transaction) has held a transaction open for ";
            Await.until("the page names the session", Duration.ofSeconds(30), () -> render(report).contains(named));
            String page = render(report);
            assertThat(page).containsPattern("<section id=\"attention\" class=\"warn\">.*" + java.util.regex.Pattern.quote(named) + "\\d+ s;");
            assertThat(page).contains("vacuum is held back until it ends (SELECT pg_terminate_backend(" + pid + ") ends it)");
            left.rollback();
        }
        assertThat(render(report)).doesNotContain("has held a transaction open");
    }

    private static Connection leftOpen(DataSource db) throws SQLException {
        HikariDataSource pool = (HikariDataSource) db;
        Properties session = new Properties();
        if (pool.getUsername() != null) {
            session.setProperty("user", pool.getUsername());
        }
        if (pool.getPassword() != null) {
            session.setProperty("password", pool.getPassword());
        }
        session.setProperty("ApplicationName", "left-open");
        Connection c = DriverManager.getConnection(pool.getJdbcUrl(), session);
        c.setAutoCommit(false);
        return c;
    }

    private static String render(StatusReport report) {
        try {
            return report.render(Map.of(), new StatusReport.Viewer(null, null, 0, 0));
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
