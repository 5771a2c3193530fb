package io.chatintake.testkit;

import io.chatintake.config.Secret;
import io.chatintake.store.EmbeddedDatabase;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Stream;
import javax.sql.DataSource;

/**
 * A PostgreSQL primary with a synchronous streaming standby, both the embedded binaries a runner
 * uses, for failover tests: a commit the primary acknowledged is on the standby too, so nothing
 * acknowledged may be missing once the standby is promoted.
 * <p>
 * zonky's binaries carry no {@code pg_basebackup}, so the standby is made with the low-level
 * backup API: {@code pg_backup_start}, a copy of the data directory, {@code pg_backup_stop}
 * (its label written as {@code backup_label}), then {@code standby.signal} and a
 * {@code primary_conninfo} for a replication role that {@code pg_hba.conf} admits on loopback.
 * A physical replication slot keeps the primary's WAL until the standby has streamed it.
 */
public final class ReplicatedPostgres implements AutoCloseable {
    private static final String STANDBY_NAME = "standby";
    private static final String REPLICATION_ROLE = "replicator";
    private static final Duration WAIT = Duration.ofSeconds(60);
    /** Never copied into the standby: the primary's process, lock and runtime state, and its WAL (copied after the backup ends). */
    private static final Set<String> NOT_COPIED = Set.of("postmaster.pid", "postmaster.opts", "epg-lock", "pg_wal",
            "pg_replslot", "pg_stat_tmp", "pg_dynshmem", "pg_notify", "pg_serial", "pg_snapshots", "pg_subtrans");

    private final EmbeddedDatabase primary;
    private final EmbeddedDatabase standby;

    private ReplicatedPostgres(EmbeddedDatabase primary, EmbeddedDatabase standby) {
        this.primary = primary;
        this.standby = standby;
    }

    /** Starts both under {@code directory} (fsync and synchronous commit on) and waits until the standby is synchronous. */
    public static ReplicatedPostgres start(Path directory) {
        Path standbyDir = directory.resolve(STANDBY_NAME);
        EmbeddedDatabase primary = EmbeddedDatabase.start(directory.resolve("primary"), RunnerProcess.freePort(), true);
        try {
            DataSource admin = admin(primary);
            Secret replicationPassword = Secret.of(HexFormat.of().formatHex(randomBytes()));
            Sql.execute(admin, "CREATE ROLE " + REPLICATION_ROLE + " WITH REPLICATION LOGIN PASSWORD '" + replicationPassword.reveal() + "'");
            Files.writeString(primary.directory().resolve("pg_hba.conf"),
                    "host    replication   " + REPLICATION_ROLE + "   127.0.0.1/32   scram-sha-256\n", StandardOpenOption.APPEND);
            Sql.execute(admin, "SELECT pg_reload_conf()");
            Sql.execute(admin, "SELECT pg_create_physical_replication_slot('" + STANDBY_NAME + "', true)");
            baseBackup(admin, primary.directory(), standbyDir);
            Files.writeString(standbyDir.resolve("standby.signal"), "");
            Files.writeString(standbyDir.resolve("postgresql.auto.conf"), "primary_conninfo = 'host=127.0.0.1 port=" + primary.port()
                    + " user=" + REPLICATION_ROLE + " password=" + replicationPassword.reveal() + " application_name=" + STANDBY_NAME
                    + "'\nprimary_slot_name = '" + STANDBY_NAME + "'\n", StandardOpenOption.APPEND);
            // What EmbeddedDatabase looks for beside a data directory it did not initialise itself.
            Files.copy(sibling(primary.directory(), ".password"), sibling(standbyDir, ".password"));
            Files.writeString(sibling(standbyDir, ".initialized"), "a copy of the primary\n");
            EmbeddedDatabase standby = EmbeddedDatabase.start(standbyDir, RunnerProcess.freePort(), true);
            Await.until("the standby streaming", WAIT, () -> Sql.count(admin,
                    "SELECT count(*) FROM pg_stat_replication WHERE application_name = '" + STANDBY_NAME + "' AND state = 'streaming'") == 1);
            // Set after the copy, so the standby, once promoted, does not wait for a standby of its own.
            Sql.execute(admin, "ALTER SYSTEM SET synchronous_standby_names = '" + STANDBY_NAME + "'");
            Sql.execute(admin, "SELECT pg_reload_conf()");
            Await.until("the standby synchronous", WAIT, () -> Sql.count(admin,
                    "SELECT count(*) FROM pg_stat_replication WHERE application_name = '" + STANDBY_NAME + "' AND sync_state = 'sync'") == 1);
            return new ReplicatedPostgres(primary, standby);
        } catch (IOException e) {
            primary.close();
            throw new UncheckedIOException(e);
        } catch (RuntimeException | AssertionError e) {
            primary.close();
            throw e;
        }
    }

    /**
     * The non-exclusive low-level backup: its session stays open from start to stop. The WAL is
     * copied after the stop, so the standby holds every segment the backup needs.
     */
    private static void baseBackup(DataSource admin, Path from, Path to) throws IOException {
        try (Connection c = admin.getConnection(); Statement s = c.createStatement()) {
            s.execute("SELECT pg_backup_start('" + STANDBY_NAME + "', true)");
            copyTree(from, to, NOT_COPIED);
            try (ResultSet rs = s.executeQuery("SELECT labelfile FROM pg_backup_stop(false)")) {
                rs.next();
                Files.writeString(to.resolve("backup_label"), rs.getString(1));
            }
        } catch (SQLException e) {
            throw new IllegalStateException("base backup of " + from + ": " + e.getMessage(), e);
        }
        // PostgreSQL starts only on a data directory its owner alone may enter.
        Files.setPosixFilePermissions(to, PosixFilePermissions.fromString("rwx------"));
        for (String emptied : NOT_COPIED) {
            if (Files.isDirectory(from.resolve(emptied))) {
                Files.createDirectories(to.resolve(emptied));
            }
        }
        copyTree(from.resolve("pg_wal"), to.resolve("pg_wal"), Set.of());
        Files.createDirectories(to.resolve("pg_wal/archive_status"));
    }

    /** A running server's files come and go during the copy: one that vanished is one the backup does not need. */
    private static void copyTree(Path from, Path to, Set<String> skippedAtTop) throws IOException {
        List<Path> paths;
        try (Stream<Path> walk = Files.walk(from)) {
            paths = walk.filter(p -> p.equals(from) || !skippedAtTop.contains(from.relativize(p).getName(0).toString())).toList();
        }
        for (Path path : paths) {
            Path target = to.resolve(from.relativize(path).toString());
            try {
                if (Files.isDirectory(path)) {
                    Files.createDirectories(target);
                } else {
                    Files.copy(path, target, StandardCopyOption.COPY_ATTRIBUTES);
                }
            } catch (NoSuchFileException | FileAlreadyExistsException e) {
                // gone since the walk, or a directory created twice
            }
        }
    }

    /** The primary killed at once ({@code kill -9} of its postmaster), and waited for until none of its processes is left. */
    public void killPrimary() {
        ProcessHandle postmaster = primary.serverProcess().orElseThrow(() -> new IllegalStateException("the primary is not running"));
        List<ProcessHandle> children = postmaster.children().toList();
        postmaster.destroyForcibly();
        Await.until("the primary's processes gone", WAIT, () -> !postmaster.isAlive() && children.stream().noneMatch(ProcessHandle::isAlive));
    }

    /** {@code pg_promote()}: returns once the standby is a primary that takes writes. */
    public void promoteStandby() {
        if (!"t".equals(Sql.string(admin(standby), "SELECT pg_promote(true, 60)"))) {
            throw new IllegalStateException("the standby was not promoted within 60 s");
        }
    }

    /** Both servers, primary first, with {@code targetServerType=primary}: what a runner is given for failover. */
    public String multiHostUrl() {
        return "jdbc:postgresql://127.0.0.1:" + primary.port() + ",127.0.0.1:" + standby.port() + "/chat_intake?targetServerType=primary";
    }

    public EmbeddedDatabase primary() {
        return primary;
    }

    public EmbeddedDatabase standby() {
        return standby;
    }

    /** The standby's data in the runners' schema: the new primary's once promoted. */
    public DataSource standbyDataSource() {
        return Sql.dataSource(standby);
    }

    private static DataSource admin(EmbeddedDatabase database) {
        return Sql.dataSource("jdbc:postgresql://127.0.0.1:" + database.port() + "/postgres", database.user(), database.password());
    }

    private static Path sibling(Path directory, String suffix) {
        return directory.resolveSibling(directory.getFileName() + suffix);
    }

    private static byte[] randomBytes() {
        byte[] bytes = new byte[16];
        ThreadLocalRandom.current().nextBytes(bytes);
        return bytes;
    }

    @Override
    public void close() {
        try (primary; standby) {
            // a killed primary's stop only logs that it found no server
        }
    }
}
