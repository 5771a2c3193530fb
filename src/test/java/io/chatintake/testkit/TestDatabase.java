package io.chatintake.testkit;

import com.zaxxer.hikari.HikariDataSource;
import io.chatintake.config.Secret;
import io.chatintake.config.Settings;
import io.chatintake.store.Database;
import io.chatintake.store.EmbeddedDatabase;
import io.chatintake.store.Migrations;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * A real, migrated PostgreSQL for tests: one embedded server per test JVM, or the database named
 * by {@code CHAT_INTAKE_TEST_DB_URL} (+ {@code _USER}, {@code _PASSWORD}). Every application
 * table is emptied before each test, so tests start from a known state.
 * <p>
 * Use with {@code @ExtendWith(TestDatabase.class)} and a {@link DataSource} parameter.
 */
public final class TestDatabase implements BeforeEachCallback, ParameterResolver {
    private static Database database;

    public static synchronized DataSource dataSource() {
        if (database == null) {
            Database opened = open();
            try {
                Migrations.apply(opened.dataSource());
            } catch (RuntimeException e) {
                // Else its PostgreSQL would outlive the test run.
                opened.close();
                throw e;
            }
            database = opened;
            Runtime.getRuntime().addShutdownHook(new Thread(opened::close, "test-database-stop"));
        }
        return database.dataSource();
    }

    private static Database open() {
        String url = System.getenv("CHAT_INTAKE_TEST_DB_URL");
        if (url != null && !url.isBlank()) {
            return Database.external(url, System.getenv().getOrDefault("CHAT_INTAKE_TEST_DB_USER", ""),
                    Secret.of(System.getenv().getOrDefault("CHAT_INTAKE_TEST_DB_PASSWORD", "")), 24);
        }
        try {
            Path dir = Files.createTempDirectory("chat-intake-test-pg");
            // Tests that do not prove durability may leave fsync off, as zonky does, for speed.
            EmbeddedDatabase embedded = EmbeddedDatabase.start(dir, 0, false);
            return Database.embedded(embedded, 24);
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The password of the test database's user (the embedded one's is made at its first start). */
    public static Secret password() {
        String password = ((HikariDataSource) dataSource()).getPassword();
        return Secret.of(password == null ? "" : password);
    }

    /** The settings an operator command (work, albums, ...) needs to open this database as a runner would. */
    public static Settings commandSettings() {
        return commandSettings(Map.of());
    }

    /** The same with these keys on top, e.g. another {@code chat-intake.db.schema}. */
    public static Settings commandSettings(Map<String, String> more) {
        HikariDataSource pool = (HikariDataSource) dataSource();
        Map<String, String> settings = new HashMap<>(more);
        settings.put("chat-intake.db.url", pool.getJdbcUrl());
        settings.put("chat-intake.db.user", pool.getUsername() == null ? "" : pool.getUsername());
        settings.put("chat-intake.db.password", pool.getPassword() == null ? "" : pool.getPassword());
        return Settings.of(settings);
    }

    /**
     * Empties every table the migrations created, except Flyway's own history. A runner shared by
     * the test class keeps reading in the background (health checks, metrics, its dispatcher), and
     * TRUNCATE locks table after table: PostgreSQL may then end it as a deadlock's victim, so it
     * tries again.
     */
    public static void truncateAll() {
        for (int attempt = 1; ; attempt++) {
            try {
                truncateOnce();
                return;
            } catch (SQLException e) {
                if (!"40P01".equals(e.getSQLState()) || attempt == 5) {
                    throw new IllegalStateException("cannot empty the test database: " + e.getMessage(), e);
                }
            }
        }
    }

    private static void truncateOnce() throws SQLException {
        try (Connection c = dataSource().getConnection(); Statement s = c.createStatement()) {
            List<String> tables = new ArrayList<>();
            try (ResultSet rs = s.executeQuery("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
                    + " AND tablename <> 'flyway_schema_history'")) {
                while (rs.next()) {
                    tables.add(rs.getString(1));
                }
            }
            if (!tables.isEmpty()) {
                s.execute("TRUNCATE " + String.join(", ", tables) + " RESTART IDENTITY CASCADE");
            }
        }
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        truncateAll();
    }

    @Override
    public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
        return parameter.getParameter().getType() == DataSource.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
        return dataSource();
    }
}
