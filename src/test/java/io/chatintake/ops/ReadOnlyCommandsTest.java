package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Settings;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code work status}, {@code albums status}, {@code telegram status}, {@code purge --dry-run} and {@code messages find}
 * read and never migrate: a newer jar's status command must not migrate a database that older
 * runners still use. Each schema here is a database of its own as far as the commands can tell.
 */
@ExtendWith(TestDatabase.class)
class ReadOnlyCommandsTest {
    private static final String OLDER = "readonly_older";
    private static final String EMPTY = "readonly_empty";
    private static final Map<String, Function<Settings, Integer>> COMMANDS = Map.of(
            "work status", s -> new WorkCommands(s, quiet()).run(List.of("status")),
            "albums status", s -> new AlbumCommands(s, quiet()).status(),
            "telegram status", s -> new TelegramCommands(s, quiet()).run(List.of("status")),
            "purge --dry-run", s -> new PurgeCommand(s, quiet()).run(List.of("--dry-run")),
            "messages find", s -> new MessagesCommand(s, quiet()).run(List.of("find", "--text", "x")));

    @AfterEach
    void dropSchemas(DataSource db) {
        Sql.execute(db, "DROP SCHEMA IF EXISTS " + OLDER + " CASCADE; DROP SCHEMA IF EXISTS " + EMPTY + " CASCADE");
    }

    @Test
    void againstAnOlderSchemaTheyNameTheVersionTheyNeedAndChangeNothing(DataSource db) {
        Flyway.configure().dataSource(db).schemas(OLDER).defaultSchema(OLDER).createSchemas(true)
                .locations("classpath:db/migration").target("10").load().migrate();
        long tables = tables(db, OLDER);
        String needed = Sql.string(db, "SELECT version FROM flyway_schema_history WHERE success ORDER BY installed_rank DESC LIMIT 1");

        COMMANDS.forEach((command, run) -> assertThatThrownBy(() -> run.apply(settings(OLDER)))
                .as(command).isInstanceOf(ConfigurationException.class)
                .hasMessage("database schema " + OLDER + " is at version 10, this command needs version " + needed
                        + "; it never migrates: start a runner of this version once (it migrates), then run it again"));

        assertThat(tables(db, OLDER)).as("tables").isEqualTo(tables);
        assertThat(Sql.string(db, "SELECT version FROM " + OLDER + ".flyway_schema_history ORDER BY installed_rank DESC LIMIT 1"))
                .as("schema version").isEqualTo("10");
    }

    @Test
    void againstAnEmptyDatabaseTheyCreateNothing(DataSource db) {
        COMMANDS.forEach((command, run) -> assertThatThrownBy(() -> run.apply(settings(EMPTY)))
                .as(command).isInstanceOf(ConfigurationException.class)
                .hasMessageStartingWith("database schema " + EMPTY + " is empty (no chat-intake tables), this command needs version "));

        assertThat(Sql.count(db, "SELECT count(*) FROM information_schema.schemata WHERE schema_name = '" + EMPTY + "'")).isZero();
    }

    @Test
    void atTheCurrentVersionTheyRun() {
        COMMANDS.forEach((command, run) -> assertThat(run.apply(TestDatabase.commandSettings())).as(command).isZero());
    }

    private static Settings settings(String schema) {
        return TestDatabase.commandSettings(Map.of("chat-intake.db.schema", schema));
    }

    private static long tables(DataSource db, String schema) {
        return Sql.count(db, "SELECT count(*) FROM information_schema.tables WHERE table_schema = '" + schema + "'");
    }

    private static PrintStream quiet() {
        return new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
    }
}
