package io.chatintake.store;

import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Secret;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.StandardOpenOption;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * PostgreSQL 15 run by the jar itself when no external database is configured (zonky's
 * binaries), with its data in {@code <data-dir>/pg} so it survives restarts.
 * <p>
 * zonky is made for tests and turns durability off; a store that acknowledges intake only after
 * a commit needs it on, so {@code fsync} and {@code synchronous_commit} are set back on unless the
 * caller asks for a throwaway test database.
 * <p>
 * After a {@code kill -9} of the JVM the postgres child keeps running and holds the data
 * directory; {@link #stopLeftoverServer(Path)} finds it through {@code postmaster.pid}.
 * <p>
 * zonky initialises with {@code trust} for every local user, and the superuser can run programs
 * ({@code COPY ... TO PROGRAM}): any process on the machine would be the database's owner. So the
 * server takes passwords only (scram-sha-256, local socket and TCP alike): a random one, made at
 * initdb and kept next to the data in {@code pg.password}, readable by the owner alone. A data
 * directory from before is upgraded at its next start: a password is made and stored, the role
 * gets it, and {@code pg_hba.conf} is rewritten to scram-sha-256 and reloaded ({@link PasswordAuth}).
 */
public final class EmbeddedDatabase implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(EmbeddedDatabase.class);
    static final String DATABASE_NAME = "chat_intake";
    static final String USER = "postgres";
    private static final Duration LEFTOVER_STOP_WAIT = Duration.ofSeconds(30);
    private static final String LOCK_FILE = "epg-lock";
    /**
     * The build packs the PostgreSQL binaries of the platform it runs on (Maven profiles in pom.xml);
     * on another platform zonky finds none and says only this.
     */
    private static final String MISSING_BINARIES = "Missing embedded postgres binaries";

    private final EmbeddedPostgres postgres;
    private final Path directory;
    private final boolean durable;
    private final Secret password;

    private EmbeddedDatabase(EmbeddedPostgres postgres, Path directory, boolean durable, Secret password) {
        this.postgres = postgres;
        this.directory = directory;
        this.durable = durable;
        this.password = password;
    }

    /**
     * @param durable false only for tests that do not prove durability: fsync stays off, as zonky sets it
     */
    public static EmbeddedDatabase start(Path directory, int port, boolean durable) {
        try {
            Files.createDirectories(directory);
            stopLeftoverServer(directory);
            discardUnfinishedInit(directory);
            boolean initialised = Files.exists(directory.resolve("PG_VERSION"));
            Secret password = PasswordAuth.password(directory, initialised);
            EmbeddedPostgres.Builder builder = EmbeddedPostgres.builder()
                    .setDataDirectory(directory)
                    .setCleanDataDirectory(false)
                    // We stop postgres ourselves, after Camel has finished its in-flight commits.
                    .setRegisterShutdownHook(false)
                    .setPGStartupWait(Duration.ofSeconds(60))
                    .setServerConfig("listen_addresses", "127.0.0.1")
                    .setServerConfig("max_connections", "200")
                    .setConnectConfig("password", password.reveal());
            if (!initialised) {
                // After zonky's own "-A trust", so these win: initdb writes a pg_hba.conf without trust.
                builder.setLocaleConfig("auth-local", PasswordAuth.METHOD)
                        .setLocaleConfig("auth-host", PasswordAuth.METHOD)
                        .setLocaleConfig("pwfile", PasswordAuth.file(directory).toString());
            }
            if (durable) {
                builder.setServerConfig("fsync", "on")
                        .setServerConfig("synchronous_commit", "on")
                        .setServerConfig("full_page_writes", "on");
            }
            if (port > 0) {
                builder.setPort(port);
            }
            EmbeddedPostgres postgres = builder.start();
            Files.writeString(initializedMarker(directory), "initdb completed and the server started once\n");
            PasswordAuth.upgrade(postgres, directory, password);
            EmbeddedDatabase database = new EmbeddedDatabase(postgres, directory, durable, password);
            database.createApplicationDatabase();
            return database;
        } catch (ConfigurationException e) {
            throw e;
        } catch (IOException | SQLException | RuntimeException e) {
            if (MISSING_BINARIES.equals(rootMessage(e))) {
                throw new ConfigurationException(missingBinariesMessage(System.getProperty("os.name"), System.getProperty("os.arch")), e);
            }
            throw new ConfigurationException("embedded PostgreSQL could not start in " + directory.toAbsolutePath()
                    + " (CHAT_INTAKE_DATA_DIR): " + rootMessage(e), e);
        }
    }

    static String missingBinariesMessage(String osName, String osArch) {
        return "this jar has no embedded PostgreSQL for " + osName + "/" + osArch + ": it carries the binaries of the platform it"
                + " was built on, and they exist for Linux x86-64 and arm64 and macOS Intel and Apple silicon; build the jar on"
                + " this machine, or set CHAT_INTAKE_DB_URL to an external PostgreSQL";
    }

    public String jdbcUrl() {
        return "jdbc:postgresql://127.0.0.1:" + postgres.getPort() + "/" + DATABASE_NAME;
    }

    public String user() {
        return USER;
    }

    /** The superuser's password, as kept in the data directory. */
    public Secret password() {
        return password;
    }

    /** The password of the embedded database on this directory, for operator commands reaching a runner's server. */
    public static Secret storedPassword(Path directory) {
        return PasswordAuth.stored(directory);
    }

    public int port() {
        return postgres.getPort();
    }

    public Path directory() {
        return directory;
    }

    public boolean durable() {
        return durable;
    }

    /** The postgres server process, for tests that stop and restart the database under a running runner. */
    public Optional<ProcessHandle> serverProcess() {
        return readPostmasterPid(directory).flatMap(ProcessHandle::of);
    }

    private void createApplicationDatabase() throws SQLException {
        try (Connection c = postgres.getPostgresDatabase().getConnection(); Statement s = c.createStatement()) {
            try (ResultSet rs = s.executeQuery("SELECT 1 FROM pg_database WHERE datname = '" + DATABASE_NAME + "'")) {
                if (rs.next()) {
                    return;
                }
            }
            s.execute("CREATE DATABASE " + DATABASE_NAME);
        }
    }

    @Override
    public void close() {
        try {
            postgres.close();
        } catch (IOException e) {
            LOG.warn("embedded PostgreSQL did not stop cleanly: {}", e.getMessage());
        }
    }

    /**
     * Stops a postgres server left running on this data directory by a process that died
     * without stopping it. A fast shutdown (SIGINT) keeps every committed transaction.
     */
    static void stopLeftoverServer(Path directory) throws IOException {
        if (runnerOwns(directory)) {
            throw new ConfigurationException("another chat-intake process is running on " + directory.toAbsolutePath()
                    + " (CHAT_INTAKE_DATA_DIR): give each runner its own data directory, or share an external database");
        }
        Optional<Long> pid = readPostmasterPid(directory);
        if (pid.isEmpty()) {
            return;
        }
        Optional<ProcessHandle> process = ProcessHandle.of(pid.get()).filter(ProcessHandle::isAlive).filter(EmbeddedDatabase::isPostgres);
        if (process.isEmpty()) {
            return; // a stale pid file: postgres itself recovers from that
        }
        LOG.warn("found a PostgreSQL server (pid {}) left running on {} by an earlier run that did not stop; stopping it",
                pid.get(), directory.toAbsolutePath());
        signal("INT", pid.get());
        try {
            if (!process.get().onExit().get(LEFTOVER_STOP_WAIT.toSeconds(), TimeUnit.SECONDS).isAlive()) {
                LOG.info("leftover PostgreSQL server (pid {}) stopped", pid.get());
                return;
            }
        } catch (Exception e) {
            // fall through to the forced stop
        }
        LOG.warn("leftover PostgreSQL server (pid {}) did not stop within {} s; killing it", pid.get(), LEFTOVER_STOP_WAIT.toSeconds());
        process.get().destroyForcibly();
    }

    /**
     * A process killed during its very first start can leave a half-written cluster that postgres
     * will never start from. Until the first start succeeded the directory holds no data, so it is
     * safe to discard and initialise again.
     */
    private static void discardUnfinishedInit(Path directory) throws IOException {
        if (Files.exists(initializedMarker(directory))) {
            return;
        }
        try (var entries = Files.list(directory)) {
            if (entries.findAny().isEmpty()) {
                return;
            }
        }
        LOG.warn("embedded PostgreSQL in {} never finished its first start; initialising it again", directory);
        stopLeftoverInitdb(directory);
        try (var paths = Files.walk(directory)) {
            for (Path path : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
                if (!path.equals(directory)) {
                    Files.delete(path);
                }
            }
        }
    }

    /**
     * initdb runs as a child process and outlives a JVM killed during the first start; left alone
     * it would go on writing into the directory while it is being cleared and initialised again.
     */
    private static void stopLeftoverInitdb(Path directory) {
        String path = directory.toAbsolutePath().toString();
        ProcessHandle.allProcesses()
                .filter(p -> p.info().commandLine().filter(c -> c.contains("initdb") && c.contains(path)).isPresent())
                .forEach(initdb -> {
                    LOG.warn("stopping initdb (pid {}) left running on {} by an earlier first start", initdb.pid(), path);
                    initdb.destroyForcibly();
                    try {
                        initdb.onExit().get(LEFTOVER_STOP_WAIT.toSeconds(), TimeUnit.SECONDS);
                    } catch (Exception e) {
                        LOG.warn("initdb (pid {}) did not stop: {}", initdb.pid(), e.getMessage());
                    }
                });
    }

    private static Path initializedMarker(Path directory) {
        return directory.resolveSibling(directory.getFileName() + ".initialized");
    }

    /**
     * zonky holds a file lock in the data directory while its JVM lives; the OS drops it when the
     * JVM dies, even by {@code kill -9}. A held lock means a live runner, not a leftover.
     */
    static boolean runnerOwns(Path directory) throws IOException {
        Path lockFile = directory.resolve(LOCK_FILE);
        if (!Files.exists(lockFile)) {
            return false;
        }
        try (FileChannel channel = FileChannel.open(lockFile, StandardOpenOption.WRITE)) {
            FileLock lock = channel.tryLock();
            if (lock == null) {
                return true;
            }
            lock.release();
            return false;
        } catch (OverlappingFileLockException e) {
            return true; // held by this very JVM
        }
    }

    /** The port of the server a live runner keeps on this directory, for operator commands. */
    public static Optional<Integer> runningServerPort(Path directory) {
        try {
            if (!runnerOwns(directory)) {
                return Optional.empty();
            }
            List<String> lines = Files.readAllLines(directory.resolve("postmaster.pid"));
            return lines.size() > 3 ? Optional.of(Integer.parseInt(lines.get(3).trim())) : Optional.empty();
        } catch (IOException | NumberFormatException e) {
            return Optional.empty();
        }
    }

    private static boolean isPostgres(ProcessHandle process) {
        return process.info().command().map(c -> c.endsWith("postgres")).orElse(true);
    }

    private static Optional<Long> readPostmasterPid(Path directory) {
        Path pidFile = directory.resolve("postmaster.pid");
        try {
            List<String> lines = Files.readAllLines(pidFile);
            return lines.isEmpty() ? Optional.empty() : Optional.of(Long.parseLong(lines.get(0).trim()));
        } catch (IOException | NumberFormatException e) {
            return Optional.empty();
        }
    }

    private static void signal(String signal, long pid) throws IOException {
        try {
            new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).inheritIO().start().waitFor(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    public static String rootMessage(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t.getMessage() == null ? t.getClass().getSimpleName() : t.getMessage();
    }
}
