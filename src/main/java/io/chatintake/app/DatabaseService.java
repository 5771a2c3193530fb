package io.chatintake.app;

import io.chatintake.store.Database;
import io.chatintake.support.ProcessIdentity;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.apache.camel.support.service.ServiceSupport;

/**
 * The database the configuration opened, as a Camel service: Camel stops it after the routes and
 * the work dispatcher, so in-flight commits finish before the pool (and an embedded server) close.
 */
final class DatabaseService extends ServiceSupport {
    private final Database database;

    DatabaseService(Database database) {
        this.database = database;
    }

    @Override
    protected void doStop() {
        database.close();
    }

    /** One row per start in {@code runner_start}: which host and process ran which version. */
    static void recordStart(DataSource dataSource, String version) {
        try (Connection c = dataSource.getConnection();
             PreparedStatement ps = c.prepareStatement("INSERT INTO runner_start (host, pid, version) VALUES (?, ?, ?)")) {
            ps.setString(1, ProcessIdentity.host());
            ps.setLong(2, ProcessHandle.current().pid());
            ps.setString(3, version);
            ps.executeUpdate();
        } catch (SQLException e) {
            throw new IllegalStateException("cannot record the runner start: " + e.getMessage(), e);
        }
    }
}
