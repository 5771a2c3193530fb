package io.chatintake.store;

import io.chatintake.config.ConfigurationException;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.output.MigrateResult;

/** Brings the schema to the version this jar needs (SQL files under {@code db/migration}). */
public final class Migrations {
    private Migrations() {
    }

    /** @return a one-line, human summary of what was done */
    public static String apply(DataSource dataSource) {
        try {
            MigrateResult result = Flyway.configure()
                    .dataSource(dataSource)
                    .locations("classpath:db/migration")
                    .loggers("slf4j")
                    .load()
                    .migrate();
            String version = result.targetSchemaVersion != null ? result.targetSchemaVersion
                    : result.initialSchemaVersion;
            return "schema at version " + version + ", " + result.migrationsExecuted + " migration(s) applied now";
        } catch (RuntimeException e) {
            throw new ConfigurationException("database migrations failed: " + EmbeddedDatabase.rootMessage(e), e);
        }
    }
}
