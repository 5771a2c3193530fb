package io.chatintake.store;

import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Secret;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HexFormat;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The embedded PostgreSQL's password: made at random once, kept in {@code <pg dir>.password}
 * (mode 0600) beside the data, and the only way in ({@code pg_hba.conf} says scram-sha-256 for
 * every line). A data directory initialised with {@code trust} before is upgraded on its next start.
 */
final class PasswordAuth {
    private static final Logger LOG = LoggerFactory.getLogger(PasswordAuth.class);
    static final String METHOD = "scram-sha-256";
    private static final SecureRandom RANDOM = new SecureRandom();

    private PasswordAuth() {
    }

    static Path file(Path directory) {
        return directory.resolveSibling(directory.getFileName() + ".password");
    }

    /**
     * The password to start with: a new one for a directory about to be initialised (or one from
     * before passwords, which {@link #upgrade} then sets), else the stored one.
     */
    static Secret password(Path directory, boolean initialised) throws IOException {
        Path file = file(directory);
        if (Files.exists(file)) {
            return stored(directory);
        }
        if (initialised && !trusts(directory)) {
            throw new ConfigurationException("the embedded PostgreSQL in " + directory.toAbsolutePath() + " takes passwords only, and its"
                    + " password file " + file.toAbsolutePath() + " is missing: restore it, or move " + directory.toAbsolutePath()
                    + " away to start with an empty database");
        }
        byte[] random = new byte[24];
        RANDOM.nextBytes(random);
        Secret password = Secret.of(HexFormat.of().formatHex(random));
        write(file, password);
        return password;
    }

    static Secret stored(Path directory) {
        Path file = file(directory);
        try {
            return Secret.of(Files.readString(file, StandardCharsets.UTF_8).strip());
        } catch (IOException e) {
            throw new ConfigurationException("cannot read the embedded PostgreSQL's password from " + file.toAbsolutePath() + ": "
                    + e.getMessage(), e);
        }
    }

    /**
     * A data directory from before passwords still trusts local users: the role gets the stored
     * password, pg_hba.conf is rewritten to scram-sha-256 and reloaded. Safe to repeat: a start
     * that stopped half-way does it again, with the same stored password.
     */
    static void upgrade(EmbeddedPostgres postgres, Path directory, Secret password) throws IOException, SQLException {
        if (!trusts(directory)) {
            return;
        }
        try (Connection c = postgres.getPostgresDatabase().getConnection(); Statement s = c.createStatement()) {
            s.execute("SET password_encryption = '" + METHOD + "'");
            // The hex password needs no quoting; the statement is never logged with it.
            s.execute("ALTER ROLE " + EmbeddedDatabase.USER + " PASSWORD '" + password.reveal() + "'");
            Path hba = directory.resolve("pg_hba.conf");
            Path next = directory.resolve("pg_hba.conf.next");
            Files.writeString(next, hbaFile(), StandardCharsets.UTF_8);
            Files.move(next, hba, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            s.execute("SELECT pg_reload_conf()");
        }
        LOG.warn("embedded PostgreSQL in {}: it trusted every local user; it now takes the password stored in {} (owner-only)",
                directory.toAbsolutePath(), file(directory).toAbsolutePath());
    }

    private static boolean trusts(Path directory) throws IOException {
        Path hba = directory.resolve("pg_hba.conf");
        if (!Files.exists(hba)) {
            return false;
        }
        List<String> lines = Files.readAllLines(hba, StandardCharsets.UTF_8);
        return lines.stream().map(String::strip).filter(l -> !l.isEmpty() && !l.startsWith("#"))
                .anyMatch(l -> l.matches(".*\\s(trust|peer|ident)(\\s.*)?"));
    }

    private static String hbaFile() {
        return "# chat-intake: passwords only (" + METHOD + "), on the socket and 127.0.0.1 alike.\n"
                + "local   all   all                 " + METHOD + "\n"
                + "host    all   all   127.0.0.1/32  " + METHOD + "\n"
                + "host    all   all   ::1/128       " + METHOD + "\n";
    }

    private static void write(Path file, Secret password) throws IOException {
        Files.createDirectories(file.toAbsolutePath().getParent());
        Path next = file.resolveSibling(file.getFileName() + ".next");
        Files.deleteIfExists(next);
        try {
            // Created owner-only, never readable by others for a moment.
            Files.createFile(next, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        } catch (FileAlreadyExistsException e) {
            throw new IOException("cannot create " + next, e);
        }
        Files.writeString(next, password.reveal() + "\n", StandardCharsets.UTF_8);
        Files.move(next, file, StandardCopyOption.ATOMIC_MOVE);
    }
}
