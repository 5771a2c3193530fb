package io.chatintake.ops.bench;

import io.chatintake.store.Database;
import io.chatintake.store.EmbeddedDatabase;
import io.chatintake.store.Migrations;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Comparator;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * A fresh durable (fsync on, synchronous_commit on) embedded PostgreSQL for one benchmark run,
 * shared by the contender (in this process, schema public) and the runner under test (a child
 * process, its own schema chat_intake): both pay for the same commits on the same server.
 */
final class BenchDatabase implements AutoCloseable {
    private final Path dir;
    private final Database database;
    private final EmbeddedDatabase embedded;

    private BenchDatabase(Path dir, EmbeddedDatabase embedded, int poolSize) {
        this.dir = dir;
        this.embedded = embedded;
        this.database = Database.embedded(embedded, poolSize);
        // The runner's schema exists from the start, so the contender's tables and any backlog can be written first.
        Migrations.apply(database.dataSource());
    }

    static BenchDatabase start(String name, int poolSize) throws IOException {
        Path dir = Files.createTempDirectory("chat-intake-bench-" + name);
        return new BenchDatabase(dir, EmbeddedDatabase.start(dir.resolve("pg"), 0, true), poolSize);
    }

    Path dir() {
        return dir;
    }

    EmbeddedDatabase embedded() {
        return embedded;
    }

    /** The server process; its children are the backends. */
    Optional<ProcessHandle> server() {
        return embedded.serverProcess();
    }

    javax.sql.DataSource dataSource() {
        return database.dataSource();
    }

    /** Settings that point a runner at this database. */
    Map<String, String> runnerEnv() {
        return Map.of("CHAT_INTAKE_DB_URL", embedded.jdbcUrl(), "CHAT_INTAKE_DB_USER", embedded.user(),
                "CHAT_INTAKE_DB_PASSWORD", embedded.password().reveal(),
                "CHAT_INTAKE_DATA_DIR", dir.resolve("runner-data").toString());
    }

    void execute(String sql) throws SQLException {
        try (Connection c = dataSource().getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    long queryLong(String sql) throws SQLException {
        try (Connection c = dataSource().getConnection(); PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
            return rs.next() ? rs.getLong(1) : 0;
        }
    }

    /** Stops the database and deletes its files: a backlog run leaves gigabytes otherwise. */
    @Override
    public void close() {
        database.close();
        deleteTree(dir);
    }

    static void deleteTree(Path root) {
        try (Stream<Path> paths = Files.walk(root)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // Only temporary files are left behind; the run's figures stand.
        }
    }
}
