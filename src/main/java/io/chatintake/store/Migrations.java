package io.chatintake.store;

import io.chatintake.config.ConfigurationException;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.MigrationInfo;
import org.flywaydb.core.api.MigrationInfoService;
import org.flywaydb.core.api.configuration.FluentConfiguration;
import org.flywaydb.core.api.output.MigrateResult;
import org.flywaydb.database.postgresql.PostgreSQLConfigurationExtension;

/**
 * Brings the schema to the version this jar needs (SQL files under {@code db/migration}). The
 * tables go where the data source's connections look for them (the first entry of their
 * {@code search_path}, see {@link DatabaseSchema}); that schema is created when missing.
 */
public final class Migrations {
    private Migrations() {
    }

    /** @return a one-line, human summary of what was done */
    public static String apply(DataSource dataSource) {
        try {
            String schema = schemaOf(dataSource);
            MigrateResult result = flyway(dataSource, schema)
                    .createSchemas(true)
                    // All pending migrations and their history rows in one transaction: a process
                    // killed while migrating (a first start under kill -9) leaves all or nothing,
                    // never a table whose migration is not recorded ("relation already exists" at
                    // every later start). PostgreSQL's DDL is transactional.
                    .group(true)
                    .load()
                    .migrate();
            String version = result.targetSchemaVersion != null ? result.targetSchemaVersion
                    : result.initialSchemaVersion;
            return "schema at version " + version + ", " + result.migrationsExecuted + " migration(s) applied now (tables in schema "
                    + schema + ")";
        } catch (DatabaseUnreachableException e) {
            throw e;
        } catch (RuntimeException e) {
            throw failed(e);
        }
    }

    /** The database gone midway is not a failed migration: all of it is applied again once it is back. */
    private static ConfigurationException failed(Exception e) {
        String message = "database migrations failed: " + EmbeddedDatabase.rootMessage(e);
        return Database.isUnreachable(e) ? new DatabaseUnreachableException(message, e) : new ConfigurationException(message, e);
    }

    /**
     * For commands that only read: the schema must already be at this jar's version; it is never
     * migrated here, since older runners may still use the database (only a runner migrates).
     * Otherwise one line saying which version is there and which one is needed.
     */
    public static void requireCurrent(DataSource dataSource) {
        String schema = schemaOf(dataSource);
        MigrationInfoService info;
        try {
            info = flyway(dataSource, schema).load().info();
        } catch (RuntimeException e) {
            throw new ConfigurationException("cannot read the database schema's version: " + EmbeddedDatabase.rootMessage(e), e);
        }
        MigrationInfo[] pending = info.pending();
        if (pending.length > 0) {
            MigrationInfo current = info.current();
            throw new ConfigurationException("database schema " + schema + " is "
                    + (current == null ? "empty (no chat-intake tables)" : "at version " + current.getVersion())
                    + ", this command needs version " + pending[pending.length - 1].getVersion()
                    + "; it never migrates: start a runner of this version once (it migrates), then run it again");
        }
    }

    private static FluentConfiguration flyway(DataSource dataSource, String schema) {
        FluentConfiguration flyway = Flyway.configure();
        // With its default lock (transaction-scoped) Flyway writes the history rows on a second
        // connection, i.e. in a second transaction: see group(true) in apply.
        flyway.getConfigurationExtension(PostgreSQLConfigurationExtension.class).setTransactionalLock(false);
        return flyway.dataSource(dataSource)
                .schemas(schema)
                .defaultSchema(schema)
                .locations("classpath:db/migration")
                .loggers("slf4j");
    }

    private static String schemaOf(DataSource dataSource) {
        try (Connection c = dataSource.getConnection()) {
            return DatabaseSchema.of(c);
        } catch (SQLException e) {
            throw failed(e);
        }
    }
}
