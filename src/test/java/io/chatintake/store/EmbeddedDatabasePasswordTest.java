package io.chatintake.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The embedded PostgreSQL takes its password only: made at random at the first start and kept
 * owner-only beside the data; a data directory from before (trust for every local user) is
 * upgraded at its next start, its data kept.
 */
class EmbeddedDatabasePasswordTest {
    @TempDir
    Path work;

    @Test
    void aNewDatabaseRefusesAConnectionWithoutItsRandomPassword() throws Exception {
        Path pg = work.resolve("data").resolve("pg");
        try (EmbeddedDatabase database = EmbeddedDatabase.start(pg, 0, false)) {
            Path file = work.resolve("data").resolve("pg.password");
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file))).isEqualTo("rw-------");
            assertThat(Files.readString(file).strip()).isEqualTo(database.password().reveal()).hasSizeGreaterThanOrEqualTo(32);
            assertNoTrust(pg);
            assertPasswordOnly(database);
        }
        // The next start takes the same password from the file.
        String before = Files.readString(work.resolve("data").resolve("pg.password"));
        try (EmbeddedDatabase again = EmbeddedDatabase.start(pg, 0, false)) {
            assertThat(again.password().reveal()).isEqualTo(before.strip());
            assertPasswordOnly(again);
        }
    }

    @Test
    void aDataDirectoryThatTrustedEveryLocalUserIsUpgradedAtItsNextStartAndKeepsItsData() throws Exception {
        Path pg = work.resolve("pg");
        // As an earlier version left it: zonky's initdb with trust, the first start recorded.
        try (EmbeddedPostgres old = EmbeddedPostgres.builder().setDataDirectory(pg).setCleanDataDirectory(false).start();
             Connection c = old.getPostgresDatabase().getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE kept (v text)");
            s.execute("INSERT INTO kept VALUES ('from before')");
        }
        Files.writeString(work.resolve("pg.initialized"), "initdb completed and the server started once\n");
        assertThat(Files.readString(pg.resolve("pg_hba.conf"))).contains("trust");

        try (EmbeddedDatabase database = EmbeddedDatabase.start(pg, 0, false)) {
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(work.resolve("pg.password")))).isEqualTo("rw-------");
            assertNoTrust(pg);
            assertPasswordOnly(database);
            try (Connection c = DriverManager.getConnection(postgresUrl(database), "postgres", database.password().reveal());
                 ResultSet rs = c.createStatement().executeQuery("SELECT v FROM kept")) {
                assertThat(rs.next()).isTrue();
                assertThat(rs.getString(1)).isEqualTo("from before");
            }
        }
        try (EmbeddedDatabase again = EmbeddedDatabase.start(pg, 0, false)) {
            assertPasswordOnly(again);
        }
    }

    private static void assertPasswordOnly(EmbeddedDatabase database) throws SQLException {
        String url = postgresUrl(database);
        assertThatThrownBy(() -> DriverManager.getConnection(url, "postgres", "").close()).as("without the password")
                .isInstanceOf(SQLException.class);
        assertThatThrownBy(() -> DriverManager.getConnection(url, "postgres", "not-the-password").close()).as("a wrong password")
                .isInstanceOf(SQLException.class).hasMessageContaining("password authentication failed");
        try (Connection c = DriverManager.getConnection(database.jdbcUrl(), "postgres", database.password().reveal())) {
            assertThat(c.isValid(5)).isTrue();
        }
    }

    private static String postgresUrl(EmbeddedDatabase database) {
        return database.jdbcUrl().replaceFirst("/[^/]+$", "/postgres");
    }

    private static void assertNoTrust(Path pg) throws Exception {
        List<String> rules = Files.readAllLines(pg.resolve("pg_hba.conf")).stream().map(String::strip)
                .filter(l -> !l.isEmpty() && !l.startsWith("#")).toList();
        assertThat(rules).isNotEmpty().allSatisfy(rule -> assertThat(rule).endsWith("scram-sha-256"));
    }
}
