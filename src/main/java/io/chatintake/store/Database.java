package io.chatintake.store;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Secret;
import io.chatintake.config.Settings;
import io.chatintake.support.ProcessIdentity;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
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
    public static final String STATEMENT_TIMEOUT_SECONDS = "chat-intake.db.statement-timeout-seconds";
    public static final String SOCKET_TIMEOUT_SECONDS = "chat-intake.db.socket-timeout-seconds";
    public static final String MIGRATION_TIMEOUT_MINUTES = "chat-intake.db.migration-timeout-minutes";
    public static final String EMBEDDED_PORT = "chat-intake.db.embedded-port";
    public static final String DATA_DIR = "chat-intake.data-dir";
    /** Set in every Kubernetes container: the embedded database has no place there. */
    static final String KUBERNETES_ENV = "KUBERNETES_SERVICE_HOST";

    private final HikariDataSource dataSource;
    private final EmbeddedDatabase embedded;
    private final String description;
    private final Target target;
    private HikariDataSource migrating;

    private Database(Target target, HikariDataSource dataSource, EmbeddedDatabase embedded, String description) {
        this.target = target;
        this.dataSource = dataSource;
        this.embedded = embedded;
        this.description = description;
    }

    /**
     * Bounds on every call: the server cancels a statement running longer than {@code statement}
     * (a lock wait, a runaway plan), and the driver gives up on a connection that answers nothing
     * for {@code socket} (a frozen link or a half-open one, which the server cannot cancel), which
     * the pool then replaces. The socket bound is the longer one, so a slow statement is cancelled
     * by the server, and its connection kept, before the driver would drop it.
     */
    public record Timeouts(Duration statement, Duration socket) {
        public Timeouts {
            if (statement.isNegative() || statement.isZero() || socket.compareTo(statement) <= 0) {
                throw new IllegalArgumentException("socket timeout " + socket + " must exceed statement timeout " + statement);
            }
        }

        /** For tests and benchmarks, whose own pools get the shipped bounds. */
        public static final Timeouts DEFAULT = new Timeouts(Duration.ofSeconds(30), Duration.ofSeconds(45));

        static Timeouts from(Settings settings) {
            int statement = settings.getInt(STATEMENT_TIMEOUT_SECONDS);
            int socket = settings.getInt(SOCKET_TIMEOUT_SECONDS);
            if (statement < 1 || socket <= statement) {
                throw new ConfigurationException(Settings.envName(SOCKET_TIMEOUT_SECONDS) + " (" + socket + ") must exceed "
                        + Settings.envName(STATEMENT_TIMEOUT_SECONDS) + " (" + statement + "), which must be at least 1");
            }
            return new Timeouts(Duration.ofSeconds(statement), Duration.ofSeconds(socket));
        }
    }

    /** Where and how to connect: what a pool, and the migrations' own connections, are made from. */
    private record Target(String url, String user, Secret password, int connectTimeoutSeconds, Timeouts timeouts,
                          Duration migrationTimeout, String schema) {
    }

    /**
     * The configured database, connected. A database that does not answer (refused, timed out, still
     * starting) is a {@link DatabaseUnreachableException}; a wrong password, a missing database or a
     * bad URL a {@link ConfigurationException}.
     */
    public static Database open(Settings settings) {
        int poolSize = settings.getInt(POOL_SIZE);
        int connectTimeout = settings.getInt(CONNECT_TIMEOUT_SECONDS);
        long borrowTimeout = settings.getLong(BORROW_TIMEOUT_MILLIS);
        Timeouts timeouts = Timeouts.from(settings);
        Duration migrationTimeout = Duration.ofMinutes(settings.getInt(MIGRATION_TIMEOUT_MINUTES));
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
            LOG.debug("database: {}", description);
            Target target = connect(new Target(url.get(), user, password, connectTimeout, timeouts, migrationTimeout, schema),
                    Settings.envName(URL), shown);
            LOG.info("database: {}", description);
            return new Database(target, pool(target, poolSize, borrowTimeout), null, description);
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
            Target target = connect(new Target(embedded.jdbcUrl(), embedded.user(), embedded.password(), connectTimeout, timeouts,
                    migrationTimeout, schema), Settings.envName(DATA_DIR), embedded.jdbcUrl());
            return new Database(target, pool(target, poolSize, borrowTimeout), embedded, description);
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
            Target target = connect(new Target(url, EmbeddedDatabase.USER, EmbeddedDatabase.storedPassword(pgDir), 10, Timeouts.from(settings),
                    Duration.ofMinutes(settings.getInt(MIGRATION_TIMEOUT_MINUTES)), DatabaseSchema.configured(settings)),
                    Settings.envName(DATA_DIR), url);
            return new Database(target, pool(target, 2, 10_000), null, "the running runner's embedded PostgreSQL in " + pgDir);
        }
        return open(settings);
    }

    /** A pool over an embedded database the caller started (tests, benchmarks). */
    public static Database embedded(EmbeddedDatabase embedded, int poolSize) {
        Target target = connect(new Target(embedded.jdbcUrl(), embedded.user(), embedded.password(), 10, Timeouts.DEFAULT, Duration.ofMinutes(30),
                DatabaseSchema.DEFAULT), "database", embedded.jdbcUrl());
        return new Database(target, pool(target, poolSize, 10_000), embedded, "embedded PostgreSQL in " + embedded.directory());
    }

    /** A pool over a database someone else runs (tests: the shared test database), in the default schema. */
    public static Database external(String url, String user, Secret password, int poolSize) {
        Target target = connect(new Target(url, user, password, 10, Timeouts.DEFAULT, Duration.ofMinutes(30), DatabaseSchema.DEFAULT),
                "database", Settings.redactUrl(url));
        return new Database(target, pool(target, poolSize, 10_000), null, Settings.redactUrl(url));
    }

    /**
     * The one place where connections get their bounds ({@link Timeouts}): the driver's socket
     * timeout, and the server's {@code statement_timeout} and {@code idle_in_transaction_session_timeout}
     * as startup options (no round trip).
     *
     * @param borrowTimeoutMillis how long a caller waits for a pooled connection: short, so a webhook whose
     *                            database is away answers 503 while its sender still listens
     */
    private static HikariDataSource pool(Target target, int poolSize, long borrowTimeoutMillis) {
        HikariConfig config = new HikariConfig();
        config.setPoolName("chat-intake-db");
        config.setMaximumPoolSize(poolSize);
        config.setConnectionTimeout(borrowTimeoutMillis);
        // Hikari checks an idle connection within this before lending it; it must fit in the borrow wait.
        config.setValidationTimeout(Math.max(250, Math.min(5000, borrowTimeoutMillis / 2)));
        config.setInitializationFailTimeout(target.connectTimeoutSeconds() * 1000L);
        configure(config, target, target.timeouts());
        return new HikariDataSource(config);
    }

    /** Every value a string: the driver reads its properties with {@code getProperty}, which skips other types. */
    private static void configure(HikariConfig config, Target target, Timeouts timeouts) {
        config.setJdbcUrl(target.url());
        if (!target.user().isEmpty()) {
            config.setUsername(target.user());
        }
        if (!target.password().isEmpty()) {
            config.setPassword(target.password().reveal());
        }
        config.addDataSourceProperty("connectTimeout", Integer.toString(target.connectTimeoutSeconds()));
        config.addDataSourceProperty("socketTimeout", Long.toString(timeouts.socket().toSeconds()));
        // A transaction of ours left idle that long has lost its process's link (half-open): the server ends it,
        // so the row locks it holds (a poll lease, a chat's lane) do not keep other processes from taking over.
        config.addDataSourceProperty("options", "-c statement_timeout=" + timeouts.statement().toMillis()
                + " -c idle_in_transaction_session_timeout=" + timeouts.statement().toMillis());
        // Which process a backend serves, in pg_stat_activity: the one holding a transaction open, the one to look at.
        config.addDataSourceProperty("ApplicationName", "chat-intake " + ProcessIdentity.name());
        config.addDataSourceProperty("currentSchema", target.schema());
    }

    /**
     * For Flyway alone: two connections whose bounds are the migration timeout, since one
     * migration may rewrite or index a large table.
     */
    public synchronized DataSource forMigrations() {
        if (migrating == null) {
            HikariConfig config = new HikariConfig();
            config.setPoolName("chat-intake-migrations");
            config.setMaximumPoolSize(2);
            // Used once per start: no connection kept once the migrations are done.
            config.setMinimumIdle(0);
            config.setIdleTimeout(10_000);
            config.setConnectionTimeout(target.connectTimeoutSeconds() * 1000L);
            config.setInitializationFailTimeout(-1);
            configure(config, target, new Timeouts(target.migrationTimeout(), target.migrationTimeout().plusSeconds(15)));
            migrating = new HikariDataSource(config);
        }
        return migrating;
    }

    /**
     * One plain connection first, so a wrong URL fails as one clear line rather than a pool's stack
     * trace; it also finds the schema to use ({@link DatabaseSchema#resolve}).
     *
     * @return the target with the schema its connections use
     */
    private static Target connect(Target target, String settingName, String shownUrl) {
        Properties props = new Properties();
        if (!target.user().isEmpty()) {
            props.setProperty("user", target.user());
        }
        if (!target.password().isEmpty()) {
            props.setProperty("password", target.password().reveal());
        }
        String timeout = Integer.toString(target.connectTimeoutSeconds());
        props.setProperty("connectTimeout", timeout);
        props.setProperty("loginTimeout", timeout);
        props.setProperty("socketTimeout", Long.toString(target.timeouts().socket().toSeconds()));
        try (Connection connection = new org.postgresql.Driver().connect(target.url(), props)) {
            if (connection == null) {
                throw new SQLException("not a PostgreSQL URL");
            }
            return new Target(target.url(), target.user(), target.password(), target.connectTimeoutSeconds(), target.timeouts(),
                    target.migrationTimeout(), DatabaseSchema.resolve(connection, target.schema()));
        } catch (SQLException e) {
            String message = settingName + ": cannot connect to " + shownUrl
                    + (target.user().isEmpty() ? "" : " as user " + target.user()) + ": " + EmbeddedDatabase.rootMessage(e);
            throw isUnreachable(e) ? new DatabaseUnreachableException(message, e) : new ConfigurationException(message, e);
        }
    }

    /**
     * A database away for now, as opposed to one that is wrong: refused or timed-out connections,
     * a link that broke, a server starting up, shutting down or out of connections. A host name
     * that does not resolve, a password refused or a database missing are not.
     */
    public static boolean isUnreachable(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof java.net.UnknownHostException) {
                return false;
            }
        }
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof SQLException sql && sql.getSQLState() != null) {
                String state = sql.getSQLState();
                if (state.startsWith("08") || state.equals("57P01") || state.equals("57P02") || state.equals("57P03")
                        || state.equals("53300")) {
                    return true;
                }
            }
            if (t instanceof java.net.ConnectException || t instanceof java.net.SocketTimeoutException) {
                return true;
            }
        }
        return false;
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
        synchronized (this) {
            if (migrating != null) {
                migrating.close();
            }
        }
        dataSource.close();
        if (embedded != null) {
            embedded.close();
            LOG.info("database: embedded PostgreSQL stopped");
        }
    }
}
