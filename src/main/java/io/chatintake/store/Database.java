package io.chatintake.store;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Secret;
import io.chatintake.config.Settings;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Properties;
import java.util.Optional;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one PostgreSQL database chat-intake keeps everything in: an external one when
 * {@code CHAT_INTAKE_DB_URL} is set, otherwise an embedded one under {@code CHAT_INTAKE_DATA_DIR}.
 */
public final class Database implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Database.class);

    public static final String URL = "chat-intake.db.url";
    public static final String USER = "chat-intake.db.user";
    public static final String PASSWORD = "chat-intake.db.password";
    public static final String POOL_SIZE = "chat-intake.db.pool-size";
    public static final String CONNECT_TIMEOUT_SECONDS = "chat-intake.db.connect-timeout-seconds";
    public static final String BORROW_TIMEOUT_MILLIS = "chat-intake.db.borrow-timeout-millis";
    public static final String EMBEDDED_PORT = "chat-intake.db.embedded-port";
    public static final String DATA_DIR = "chat-intake.data-dir";
    /** Set in every Kubernetes container: the embedded database has no place there. */
    static final String KUBERNETES_ENV = "KUBERNETES_SERVICE_HOST";

    private final HikariDataSource dataSource;
    private final EmbeddedDatabase embedded;
    private final String description;

    private Database(HikariDataSource dataSource, EmbeddedDatabase embedded, String description) {
        this.dataSource = dataSource;
        this.embedded = embedded;
        this.description = description;
    }

    public static Database open(Settings settings) {
        int poolSize = settings.getInt(POOL_SIZE);
        int connectTimeout = settings.getInt(CONNECT_TIMEOUT_SECONDS);
        long borrowTimeout = settings.getLong(BORROW_TIMEOUT_MILLIS);
        String schema = DatabaseSchema.configured(settings);
        Optional<String> url = settings.get(URL);
        if (url.isPresent()) {
            String user = settings.get(USER).orElse("");
            Secret password = settings.secret(PASSWORD).orElse(Secret.of(""));
            String shown = Settings.redactUrl(url.get());
            if (!url.get().startsWith("jdbc:postgresql:")) {
                throw new ConfigurationException(Settings.envName(URL) + " must be a PostgreSQL JDBC URL (jdbc:postgresql://host:port/database), got " + shown);
            }
            String description = "external PostgreSQL " + shown + (user.isEmpty() ? "" : " as user " + user);
            LOG.info("database: {}", description);
            return new Database(pool(url.get(), user, password, poolSize, connectTimeout, borrowTimeout, schema, Settings.envName(URL),
                    shown), null, description);
        }
        if (settings.environment(KUBERNETES_ENV).isPresent()) {
            // A pod's embedded database would vanish with the pod and not be shared by the replicas.
            throw new ConfigurationException("running on Kubernetes (" + KUBERNETES_ENV + " is set) without "
                    + Settings.envName(URL) + ": the embedded database is for one machine; set " + Settings.envName(URL)
                    + " to the PostgreSQL all replicas share");
        }
        Path dataDir = dataDir(settings);
        Path pgDir = dataDir.resolve("pg");
        LOG.info("database: no {} set, starting embedded PostgreSQL 15 in {}", Settings.envName(URL), pgDir);
        EmbeddedDatabase embedded = EmbeddedDatabase.start(pgDir, settings.getInt(EMBEDDED_PORT), true);
        String description = "embedded PostgreSQL 15 in " + pgDir + " on 127.0.0.1:" + embedded.port()
                + " (fsync on, synchronous_commit on)";
        LOG.info("database: {}", description);
        try {
            return new Database(pool(embedded.jdbcUrl(), embedded.user(), embedded.password(), poolSize, connectTimeout, borrowTimeout, schema,
                    Settings.envName(DATA_DIR), embedded.jdbcUrl()), embedded, description);
        } catch (RuntimeException e) {
            embedded.close();
            throw e;
        }
    }

    /** Where the embedded database and the media store live ({@code CHAT_INTAKE_DATA_DIR}). */
    public static Path dataDir(Settings settings) {
        return Path.of(settings.value(DATA_DIR)).toAbsolutePath().normalize();
    }

    /**
     * For operator commands: the configured external database, or the embedded one a running
     * runner keeps (never a second server on its data directory), or else an embedded one of
     * its own for the command's duration.
     */
    public static Database openForCommand(Settings settings) {
        if (settings.get(URL).isPresent()) {
            return open(settings);
        }
        Path pgDir = dataDir(settings).resolve("pg");
        Optional<Integer> port = EmbeddedDatabase.runningServerPort(pgDir);
        if (port.isPresent()) {
            String url = "jdbc:postgresql://127.0.0.1:" + port.get() + "/" + EmbeddedDatabase.DATABASE_NAME;
            return new Database(pool(url, EmbeddedDatabase.USER, EmbeddedDatabase.storedPassword(pgDir), 2, 10, 10_000, DatabaseSchema.configured(settings),
                    Settings.envName(DATA_DIR), url), null,
                    "the running runner's embedded PostgreSQL in " + pgDir);
        }
        return open(settings);
    }

    /** A pool over an embedded database the caller started (tests, benchmarks). */
    public static Database embedded(EmbeddedDatabase embedded, int poolSize) {
        return new Database(pool(embedded.jdbcUrl(), embedded.user(), embedded.password(), poolSize, 10, 10_000, DatabaseSchema.DEFAULT, "database",
                embedded.jdbcUrl()),
                embedded, "embedded PostgreSQL in " + embedded.directory());
    }

    /** A pool over a database someone else runs (tests: the shared test database), in the default schema. */
    public static Database external(String url, String user, Secret password, int poolSize) {
        return new Database(pool(url, user, password, poolSize, 10, 10_000, DatabaseSchema.DEFAULT, "database", Settings.redactUrl(url)), null,
                Settings.redactUrl(url));
    }

    /**
     * @param connectTimeoutSeconds how long the start waits for the database (and a new connection's connect)
     * @param borrowTimeoutMillis   how long a caller waits for a pooled connection: short, so a webhook whose
     *                              database is away answers 503 while its sender still listens
     */
    private static HikariDataSource pool(String url, String user, Secret password, int poolSize, int connectTimeoutSeconds,
                                         long borrowTimeoutMillis, String schema, String settingName, String shownUrl) {
        HikariConfig config = new HikariConfig();
        config.setPoolName("chat-intake-db");
        config.setJdbcUrl(url);
        if (!user.isEmpty()) {
            config.setUsername(user);
        }
        if (!password.isEmpty()) {
            config.setPassword(password.reveal());
        }
        config.setMaximumPoolSize(poolSize);
        config.setConnectionTimeout(borrowTimeoutMillis);
        // Hikari checks an idle connection within this before lending it; it must fit in the borrow wait.
        config.setValidationTimeout(Math.max(250, Math.min(5000, borrowTimeoutMillis / 2)));
        config.setInitializationFailTimeout(connectTimeoutSeconds * 1000L);
        config.addDataSourceProperty("connectTimeout", connectTimeoutSeconds);
        config.addDataSourceProperty("ApplicationName", "chat-intake");
        config.addDataSourceProperty("currentSchema", resolveSchema(url, user, password, connectTimeoutSeconds, schema, settingName, shownUrl));
        return new HikariDataSource(config);
    }

    /**
     * One plain connection first, so a wrong URL fails as one clear line rather than a pool's stack
     * trace; it also finds the schema to use ({@link DatabaseSchema#resolve}).
     */
    private static String resolveSchema(String url, String user, Secret password, int connectTimeoutSeconds, String schema,
                                        String settingName, String shownUrl) {
        Properties props = new Properties();
        if (!user.isEmpty()) {
            props.setProperty("user", user);
        }
        if (!password.isEmpty()) {
            props.setProperty("password", password.reveal());
        }
        props.setProperty("connectTimeout", Integer.toString(connectTimeoutSeconds));
        props.setProperty("loginTimeout", Integer.toString(connectTimeoutSeconds));
        try (Connection connection = new org.postgresql.Driver().connect(url, props)) {
            if (connection == null) {
                throw new SQLException("not a PostgreSQL URL");
            }
            return DatabaseSchema.resolve(connection, schema);
        } catch (SQLException e) {
            throw new ConfigurationException(settingName + ": cannot connect to " + shownUrl
                    + (user.isEmpty() ? "" : " as user " + user) + ": " + EmbeddedDatabase.rootMessage(e), e);
        }
    }

    public DataSource dataSource() {
        return dataSource;
    }

    public String description() {
        return description;
    }

    public Optional<EmbeddedDatabase> embedded() {
        return Optional.ofNullable(embedded);
    }

    @Override
    public void close() {
        dataSource.close();
        if (embedded != null) {
            embedded.close();
            LOG.info("database: embedded PostgreSQL stopped");
        }
    }
}
