package io.chatintake.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Settings;
import io.chatintake.ops.WorkCommands;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;

/**
 * chat-intake on a database shared with other applications: its tables live in a schema of its
 * own, created by the migrations, and every connection (runner pool, operator commands, the
 * aggregation repository) finds them there. Each test gets a fresh database on the test server.
 */
class DatabaseSchemaTest {
    private static final AtomicInteger DATABASES = new AtomicInteger();

    @Test
    void besideAnotherApplicationsTablesInPublicOurTablesGoToTheirOwnSchema() throws Exception {
        String url = freshDatabase();
        DataSource plain = plain(url);
        // Another application's tables, one of them named like one of ours.
        Sql.execute(plain, "CREATE TABLE customer (id int PRIMARY KEY, name text)");
        Sql.execute(plain, "INSERT INTO customer VALUES (1, 'Ada')");
        Sql.execute(plain, "CREATE TABLE work_item (their_column text)");
        Sql.execute(plain, "CREATE TABLE invoices (id int)");
        // What the runner used to do on such a database: migrate into public, and stop.
        assertThatThrownBy(() -> Flyway.configure().dataSource(url, user(), password()).locations("classpath:db/migration")
                .load().migrate()).hasMessageContaining("Found non-empty schema(s) \"public\" but no schema history table");
        // And a history table of its own, which is not chat-intake's.
        Sql.execute(plain, "CREATE TABLE flyway_schema_history (installed_rank int PRIMARY KEY, script text)");
        Sql.execute(plain, "INSERT INTO flyway_schema_history VALUES (1, 'V1__customers.sql')");

        try (Database database = Database.open(settings(url, Map.of()))) {
            assertThat(Migrations.apply(database.dataSource())).contains("applied now (tables in schema chat_intake)");
            DataSource pool = database.dataSource();
            Sql.execute(pool, "INSERT INTO runner_start (host, pid, version) VALUES ('h', 1, 't')");
            assertThat(Sql.string(pool, "SELECT current_schema()")).isEqualTo("chat_intake");
            assertThat(Sql.count(pool, "SELECT count(*) FROM work_item")).isZero();
            assertThat(Sql.count(pool, "SELECT count(*) FROM album")).as("unqualified names resolve in our schema").isZero();
        }

        assertThat(tablesIn(plain, "public")).isEqualTo("customer,flyway_schema_history,invoices,work_item");
        assertThat(tablesIn(plain, "chat_intake")).contains("album", "flyway_schema_history", "runner_start", "work_item");
        assertThat(Sql.string(plain, "SELECT name FROM public.customer")).isEqualTo("Ada");
        assertThat(Sql.count(plain, "SELECT count(*) FROM public.flyway_schema_history")).isEqualTo(1);
        assertThat(Sql.string(plain, "SELECT their_column FROM public.work_item LIMIT 0")).isNull();
        assertThat(Sql.count(plain, "SELECT count(*) FROM chat_intake.runner_start")).isEqualTo(1);

        // Operator commands open the same schema, and create nothing elsewhere.
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int exit = new WorkCommands(settings(url, Map.of()), new PrintStream(out, true, StandardCharsets.UTF_8)).run(List.of("status"));
        assertThat(exit).as(out.toString(StandardCharsets.UTF_8)).isZero();
        assertThat(tablesIn(plain, "public")).isEqualTo("customer,flyway_schema_history,invoices,work_item");
    }

    @Test
    void theSchemaIsASetting() {
        String url = freshDatabase();
        try (Database database = Database.open(settings(url, Map.of(DatabaseSchema.SETTING, "intake_b")))) {
            assertThat(Migrations.apply(database.dataSource())).contains("(tables in schema intake_b)");
            assertThat(Sql.count(database.dataSource(), "SELECT count(*) FROM runner_start")).isZero();
        }
        assertThat(tablesIn(plain(url), "intake_b")).contains("runner_start", "telegram_update");
        assertThat(tablesIn(plain(url), "chat_intake")).isEmpty();
    }

    @Test
    void anInstallFromBeforeSchemasKeepsUsingItsTablesInPublic() {
        String url = freshDatabase();
        // chat-intake as it was: migrations straight into public.
        Flyway.configure().dataSource(url, user(), password()).locations("classpath:db/migration").load().migrate();
        Sql.execute(plain(url), "INSERT INTO runner_start (host, pid, version) VALUES ('old', 1, 'old')");

        try (Database database = Database.open(settings(url, Map.of()))) {
            assertThat(Migrations.apply(database.dataSource())).contains("0 migration(s) applied now (tables in schema public)");
            assertThat(Sql.string(database.dataSource(), "SELECT version FROM runner_start")).isEqualTo("old");
        }
        assertThat(tablesIn(plain(url), "chat_intake")).isEmpty();
    }

    @Test
    void aSchemaNameThatIsNotAPlainIdentifierIsRefused() {
        assertThatThrownBy(() -> DatabaseSchema.configured(Settings.of(Map.of(DatabaseSchema.SETTING, "chat-intake; drop"))))
                .isInstanceOf(ConfigurationException.class)
                .hasMessage("CHAT_INTAKE_DB_SCHEMA (chat-intake.db.schema) must be a lower-case PostgreSQL identifier"
                        + " (letters, digits, _), got 'chat-intake; drop'");
    }

    private static Settings settings(String url, Map<String, String> extra) {
        Map<String, String> values = new HashMap<>(Map.of(Database.URL, url, Database.USER, user(), Database.POOL_SIZE, "2"));
        if (!password().isEmpty()) {
            values.put(Database.PASSWORD, password());
        }
        values.putAll(extra);
        return Settings.of(values);
    }

    private static String tablesIn(DataSource db, String schema) {
        String tables = Sql.string(db, "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE schemaname = '"
                + schema + "'");
        return tables == null ? "" : tables;
    }

    /** A new, empty database on the test server, as another application's database would be. */
    private static String freshDatabase() {
        String name = "shared_" + ProcessHandle.current().pid() + "_" + DATABASES.incrementAndGet();
        try (Connection c = TestDatabase.dataSource().getConnection()) {
            c.createStatement().execute("DROP DATABASE IF EXISTS " + name);
            c.createStatement().execute("CREATE DATABASE " + name);
            return c.getMetaData().getURL().replaceFirst("(jdbc:postgresql://[^/]+/)[^?]*(\\?.*)?$", "$1" + name);
        } catch (SQLException e) {
            throw new IllegalStateException("cannot create a database on the test server: " + e.getMessage(), e);
        }
    }

    private static DataSource plain(String url) {
        org.postgresql.ds.PGSimpleDataSource ds = new org.postgresql.ds.PGSimpleDataSource();
        ds.setUrl(url);
        ds.setUser(user());
        ds.setPassword(password());
        return ds;
    }

    private static String user() {
        String external = System.getenv("CHAT_INTAKE_TEST_DB_URL");
        return external == null || external.isBlank() ? "postgres" : System.getenv().getOrDefault("CHAT_INTAKE_TEST_DB_USER", "");
    }

    private static String password() {
        return TestDatabase.password().reveal();
    }
}
