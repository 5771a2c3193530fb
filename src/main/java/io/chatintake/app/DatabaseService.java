package io.chatintake.app;

import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Settings;
import io.chatintake.store.Database;
import io.chatintake.store.DatabaseUnreachableException;
import io.chatintake.store.Migrations;
import io.chatintake.store.PendingDataSource;
import io.chatintake.support.ProcessIdentity;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Optional;
import javax.sql.DataSource;
import org.apache.camel.CamelContext;
import org.apache.camel.support.service.ServiceSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The runner's database, as a Camel service. Opened (migrated, its start recorded) while the
 * configuration is read if it answers; else the runner starts without it and waits: a database
 * that refuses, times out or is still starting up is said once, tried again with a growing pause,
 * and said once more when it is back, and only then do the runner's routes start. A database that
 * is wrong (a password refused, a database missing, a migration failing) is a configuration
 * error, found at start or on its return, and ends the runner.
 * <p>
 * Camel stops it after the routes and the work dispatcher, so in-flight commits finish before the
 * pool (and an embedded server) close.
 */
final class DatabaseService extends ServiceSupport {
    private static final Logger LOG = LoggerFactory.getLogger(DatabaseService.class);
    /** Its name in the registry, where {@link Runner} finds a configuration error met while waiting. */
    static final String NAME = "chatIntakeDatabase";
    private static final Duration FIRST_PAUSE = Duration.ofSeconds(1);
    private static final Duration LONGEST_PAUSE = Duration.ofSeconds(10);

    private final Settings settings;
    private final PendingDataSource dataSource = new PendingDataSource();
    private volatile Database database;
    private volatile ConfigurationException failure;
    private volatile boolean stopping;
    private boolean waitingSaid;
    private Thread waiting;

    DatabaseService(Settings settings) {
        this.settings = settings;
    }

    /** What every bean uses: the pool once the database answered, a database away until then. */
    DataSource dataSource() {
        return dataSource;
    }

    boolean isOpen() {
        return dataSource.isOpen();
    }

    /** The configuration error that ended a wait, if one did. */
    Optional<ConfigurationException> failure() {
        return Optional.ofNullable(failure);
    }

    /**
     * One attempt: the database opened and migrated, or false when it does not answer (said once,
     * the first time). A configuration error is thrown.
     */
    synchronized boolean tryOpen() {
        if (isOpen()) {
            return true;
        }
        Database opened;
        try {
            opened = Database.open(settings);
        } catch (DatabaseUnreachableException e) {
            return waiting(e);
        }
        try {
            LOG.info("migrations: {}", Migrations.apply(opened.forMigrations()));
            recordStart(opened.dataSource(), Runner.version());
        } catch (DatabaseUnreachableException e) {
            opened.close();
            return waiting(e);
        } catch (RuntimeException e) {
            opened.close();
            throw e;
        }
        database = opened;
        dataSource.open(opened.dataSource());
        return true;
    }

    private boolean waiting(DatabaseUnreachableException e) {
        dataSource.waitingBecause(e.getMessage());
        if (!waitingSaid) {
            waitingSaid = true;
            LOG.warn("database: not reachable ({}); waiting for it: webhooks are answered 503, readiness is DOWN,"
                    + " and nothing is polled or handled until it answers", e.getMessage());
        }
        return false;
    }

    /**
     * Tries again in the background until the database answers, then runs {@code whenOpen}; a
     * configuration error met then is said in one line and stops the context (the runner exits).
     */
    synchronized void awaitThen(CamelContext context, Runnable whenOpen) {
        waiting = new Thread(() -> {
            long started = System.nanoTime();
            Duration pause = FIRST_PAUSE;
            try {
                while (!stopping) {
                    sleep(pause);
                    pause = pause.multipliedBy(2).compareTo(LONGEST_PAUSE) > 0 ? LONGEST_PAUSE : pause.multipliedBy(2);
                    if (!stopping && tryOpen()) {
                        LOG.info("database: reachable after {} s: {}", Duration.ofNanos(System.nanoTime() - started).toSeconds(),
                                database.description());
                        whenOpen.run();
                        return;
                    }
                }
            } catch (ConfigurationException e) {
                failure = e;
                LOG.error("chat-intake: {}", e.getMessage());
                context.stop();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "database-wait");
        waiting.setDaemon(true);
        waiting.start();
    }

    private static void sleep(Duration pause) throws InterruptedException {
        Thread.sleep(pause.toMillis());
    }

    @Override
    protected void doStop() {
        stopping = true;
        Thread thread;
        synchronized (this) {
            thread = waiting;
        }
        if (thread != null && thread != Thread.currentThread()) {
            thread.interrupt();
        }
        Database open = database;
        if (open != null) {
            open.close();
        }
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
            if (Database.isUnreachable(e)) {
                throw new DatabaseUnreachableException("cannot record the runner start: " + e.getMessage(), e);
            }
            throw new IllegalStateException("cannot record the runner start: " + e.getMessage(), e);
        }
    }
}
