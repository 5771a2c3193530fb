package io.chatintake.testkit;

import io.chatintake.store.EmbeddedDatabase;
import io.chatintake.store.Migrations;
import io.chatintake.support.DirectoryTree;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * An embedded PostgreSQL cluster initialised and migrated once per build and copied where a test's
 * database would be made: initdb and the migrations take seconds each on 2 cores, a copy a fraction
 * of one. A copy is what {@link EmbeddedDatabase} and a runner leave after their first start (the
 * data directory, its password file and its initialised marker, the schema current), so starting
 * on it is an ordinary restart. For tests whose point is not the first start itself.
 */
public final class ClusterTemplate {
    private static final String NAME = "pg";
    /** What {@link EmbeddedDatabase} keeps beside a data directory named {@code pg}. */
    private static final List<String> SIBLINGS = List.of(NAME + ".password", NAME + ".initialized");

    private static Path template;

    private ClusterTemplate() {
    }

    /** {@link EmbeddedDatabase#start} on a copy of the template (made first unless {@code directory} exists). */
    public static EmbeddedDatabase start(Path directory, int port, boolean durable) {
        copyTo(directory);
        return EmbeddedDatabase.start(directory, port, durable);
    }

    /**
     * The runner of {@code env} (from {@link RunnerProcess#baseEnv}) finds its embedded database
     * initialised already; nothing is copied over one it has.
     */
    public static Map<String, String> seed(Map<String, String> env) {
        copyTo(Path.of(env.get("CHAT_INTAKE_DATA_DIR")).resolve(NAME));
        return env;
    }

    private static void copyTo(Path directory) {
        if (Files.exists(directory)) {
            return;
        }
        Path source = template();
        try {
            Files.createDirectories(directory.getParent());
            copyTree(source.resolve(NAME), directory);
            for (String sibling : SIBLINGS) {
                Files.copy(source.resolve(sibling), directory.resolveSibling(sibling.replace(NAME, directory.getFileName().toString())),
                        StandardCopyOption.COPY_ATTRIBUTES);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void copyTree(Path from, Path to) throws IOException {
        try (Stream<Path> paths = Files.walk(from)) {
            for (Path path : (Iterable<Path>) paths::iterator) {
                Files.copy(path, to.resolve(from.relativize(path).toString()), StandardCopyOption.COPY_ATTRIBUTES);
            }
        }
    }

    /**
     * The template beside the jar, made again when older than it; a file lock keeps the
     * integration tests' parallel forks from making it twice.
     */
    private static synchronized Path template() {
        if (template != null) {
            return template;
        }
        Path jar = RunnerProcess.jar();
        Path dir = jar.resolveSibling("test-cluster-template");
        try (FileChannel lockFile = FileChannel.open(jar.resolveSibling("test-cluster-template.lock"),
                StandardOpenOption.CREATE, StandardOpenOption.WRITE);
             FileLock ignored = lockFile.lock()) {
            Path done = dir.resolve("made");
            if (!Files.isRegularFile(done) || Files.getLastModifiedTime(done).compareTo(Files.getLastModifiedTime(jar)) < 0) {
                DirectoryTree.delete(dir);
                Files.createDirectories(dir);
                try (EmbeddedDatabase database = EmbeddedDatabase.start(dir.resolve(NAME), 0, false)) {
                    Migrations.apply(Sql.dataSource(database));
                }
                Files.writeString(done, "initdb, the application database and its migrations, then a clean stop\n");
            }
            template = dir;
            return dir;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
