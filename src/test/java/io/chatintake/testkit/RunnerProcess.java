package io.chatintake.testkit;

import io.chatintake.store.EmbeddedDatabase;
import io.chatintake.support.DirectoryTree;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * The real jar ({@code target/chat-intake.jar}) as a child process, for tests where the process
 * boundary is the point: start, SIGTERM, {@code kill -9}, restart on the same data directory.
 * Its stdout and stderr go to one log file the test can read.
 */
public final class RunnerProcess implements AutoCloseable {
    /** Runners not closed yet: what a failed wait shows ({@link #diagnostics}). */
    private static final Set<RunnerProcess> LIVE = ConcurrentHashMap.newKeySet();

    private final Process process;
    private final Path log;
    private final int httpPort;
    private final Path dataDir;
    /** This runner's own, so that no request to it can travel on a kept-alive connection to an earlier runner on the same port. */
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    private RunnerProcess(Process process, Path log, int httpPort, Path dataDir) {
        this.process = process;
        this.log = log;
        this.httpPort = httpPort;
        this.dataDir = dataDir;
    }

    /** Settings every runner in a test gets: its own data dir, HTTP port and embedded database port. */
    public static Map<String, String> baseEnv(Path workDir) {
        Map<String, String> env = new HashMap<>();
        env.put("CHAT_INTAKE_DATA_DIR", workDir.resolve("data").toString());
        env.put("CHAT_INTAKE_HTTP_PORT", Integer.toString(freePort()));
        env.put("CHAT_INTAKE_DB_EMBEDDED_PORT", Integer.toString(freePort()));
        env.put("CHAT_INTAKE_ROUTES_DIR", workDir.resolve("routes").toString());
        return env;
    }

    /**
     * {@link #baseEnv} plus the shipped routes and a bot polling the simulator with test-speed
     * settings (1 s long polls, an 8 s lease, idle workers looking every 100 ms).
     */
    public static Map<String, String> pollingEnv(Path workDir, String simulatorUrl, String token) {
        Map<String, String> env = baseEnv(workDir);
        env.put("CHAT_INTAKE_ROUTES_DIR", Path.of("routes").toAbsolutePath().toString());
        env.put("TELEGRAM_BOT_TOKEN", token);
        env.put("TELEGRAM_API_URL", simulatorUrl);
        env.put("TELEGRAM_POLL_TIMEOUT_SECONDS", "1");
        env.put("TELEGRAM_LEASE_SECONDS", "8");
        env.put("WORK_POLL_INTERVAL_MILLIS", "100");
        return env;
    }

    /**
     * The embedded database of a runner started with {@link #baseEnv}, reachable while its postgres
     * runs. Asked for before the runner's first start, its password is chosen here, in the file the
     * runner then starts its database with.
     */
    public static javax.sql.DataSource embeddedDatabase(Map<String, String> env) {
        Path pgDir = Path.of(env.get("CHAT_INTAKE_DATA_DIR")).resolve("pg");
        Path passwordFile = pgDir.resolveSibling("pg.password");
        try {
            if (!Files.exists(passwordFile)) {
                Files.createDirectories(passwordFile.getParent());
                Files.createFile(passwordFile, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
                Files.writeString(passwordFile, "runner-test-" + Long.toHexString(System.nanoTime()) + "\n");
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return Sql.dataSource("jdbc:postgresql://127.0.0.1:" + env.get("CHAT_INTAKE_DB_EMBEDDED_PORT") + "/chat_intake", "postgres",
                EmbeddedDatabase.storedPassword(pgDir));
    }

    public static RunnerProcess start(Path workDir, Map<String, String> env, String... args) {
        List<String> command = new ArrayList<>(jvm());
        command.addAll(List.of("-jar", jar().toString()));
        command.addAll(List.of(args));
        return start(workDir, env, command);
    }

    /**
     * The jar run as another OS user (the caller must be root), with the environment as given: its
     * data directory must belong to that user.
     */
    public static RunnerProcess startAs(long uid, long gid, Path workDir, Map<String, String> env) {
        List<String> command = new ArrayList<>(List.of("setpriv", "--reuid=" + uid, "--regid=" + gid, "--clear-groups", "--"));
        command.addAll(jvm());
        command.addAll(List.of("-jar", jar().toString()));
        return start(workDir, env, command);
    }

    /**
     * The jar with its wall clock {@code ahead} of this machine's (libfaketime, Debian's
     * {@code faketime} package, preloaded into the JVM itself so that closing the runner ends it;
     * monotonic time left as it is, as a drifted NTP client leaves it).
     */
    public static RunnerProcess startWithClockAhead(Path workDir, Map<String, String> env, Duration ahead) {
        List<String> command = new ArrayList<>(jvm());
        command.addAll(List.of("-jar", jar().toString()));
        Map<String, String> faked = new HashMap<>(env);
        faked.put("LD_PRELOAD", LIBFAKETIME.toString());
        faked.put("FAKETIME", "+" + ahead.toSeconds() + "s");
        faked.put("FAKETIME_DONT_FAKE_MONOTONIC", "1");
        return start(workDir, faked, command);
    }

    private static final Path LIBFAKETIME = Path.of("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1");

    /** Whether {@link #startWithClockAhead} can run here. */
    public static boolean faketimeInstalled() {
        return Files.isRegularFile(LIBFAKETIME);
    }

    /**
     * camel-main's own {@code org.apache.camel.main.Main} with the jar on the classpath and only
     * system properties: no chat-intake launcher on the call path.
     */
    public static RunnerProcess startCamelMain(Path workDir, Map<String, String> env, String... systemProperties) {
        List<String> command = new ArrayList<>(jvm());
        command.addAll(List.of(systemProperties));
        command.addAll(List.of("-cp", jar().toString(), "org.apache.camel.main.Main"));
        return start(workDir, env, command);
    }

    private static RunnerProcess start(Path workDir, Map<String, String> env, List<String> command) {
        try {
            Files.createDirectories(workDir);
            Path log = Files.createTempFile(workDir, "runner-", ".log");
            ProcessBuilder builder = new ProcessBuilder(command)
                    .redirectErrorStream(true)
                    .redirectOutput(log.toFile());
            // The runner must see only what the test gives it, not a CI machine's settings.
            builder.environment().keySet().removeIf(k -> k.startsWith("CHAT_INTAKE_") || k.startsWith("TELEGRAM_")
                    || k.startsWith("UNIFYPORT_") || k.equals("KUBERNETES_SERVICE_HOST"));
            builder.environment().put("CHAT_INTAKE_CONFIG", Path.of("config/application.properties").toAbsolutePath().toString());
            builder.environment().putAll(env);
            String portText = env.getOrDefault("CHAT_INTAKE_HTTP_PORT", "8080");
            int port = portText.matches("\\d+") ? Integer.parseInt(portText) : -1;
            RunnerProcess runner = new RunnerProcess(builder.start(), log, port, Path.of(env.getOrDefault("CHAT_INTAKE_DATA_DIR", "data")));
            LIVE.add(runner);
            return runner;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static Path jar() {
        Path jar = Path.of(System.getProperty("chat-intake.jar", "target/chat-intake.jar")).toAbsolutePath();
        if (!Files.isRegularFile(jar)) {
            throw new IllegalStateException("the runnable jar is missing: " + jar + " (run `mvn verify`, which packages before integration tests)");
        }
        return jar;
    }

    private static String javaBinary() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /**
     * The JVM of every runner a test starts, tuned for what a test runner is, short-lived: the
     * suite starts about a hundred, each spending most of its life starting on 2 cores. C1 only,
     * the serial collector and a class-data archive of the jar (made once per jar) take a start
     * from ~4.8 s to ~2.6 s.
     */
    private static synchronized List<String> jvm() {
        if (!archiveLooked) {
            archiveLooked = true;
            archive = classDataArchive();
        }
        List<String> options = shortLivedJvm();
        if (archive != null) {
            options.addAll(List.of("-XX:SharedArchiveFile=" + archive, "-Xlog:cds=off", "-Xlog:cds+dynamic=off"));
        }
        return options;
    }

    private static boolean archiveLooked;
    private static Path archive;

    private static List<String> shortLivedJvm() {
        return new ArrayList<>(List.of(javaBinary(), "-Xmx512m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"));
    }

    /**
     * The jar's class-data archive, written by one runner that starts and stops cleanly; null when
     * that fails. A file lock keeps the integration tests' parallel forks from writing it twice.
     */
    private static Path classDataArchive() {
        Path jar = jar();
        Path file = jar.resolveSibling("chat-intake-test-runner.jsa");
        try (FileChannel lockFile = FileChannel.open(jar.resolveSibling("chat-intake-test-runner.lock"),
                StandardOpenOption.CREATE, StandardOpenOption.WRITE);
             FileLock ignored = lockFile.lock()) {
            if (Files.isRegularFile(file) && Files.getLastModifiedTime(file).compareTo(Files.getLastModifiedTime(jar)) > 0) {
                return file;
            }
            Files.deleteIfExists(file);
            Path dir = Files.createTempDirectory("runner-archive");
            Map<String, String> env = baseEnv(dir);
            env.put("CHAT_INTAKE_ROUTES_DIR", Path.of("routes").toAbsolutePath().toString());
            List<String> command = shortLivedJvm();
            command.addAll(List.of("-XX:ArchiveClassesAtExit=" + file, "-jar", jar.toString()));
            try (RunnerProcess dumping = start(dir, env, command)) {
                dumping.awaitReady();
                dumping.terminate(Duration.ofSeconds(60));
            }
            DirectoryTree.delete(dir);
            return Files.isRegularFile(file) ? file : null;
        } catch (IOException | AssertionError e) {
            System.err.println("runners start without a class-data archive: " + e.getMessage());
            return null;
        }
    }

    public static int freePort() {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public String output() {
        try {
            return Files.readString(log, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Waits until the log holds the text; fails with the log when the process exits or time runs out. */
    public RunnerProcess awaitOutput(String text, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (output().contains(text)) {
                return this;
            }
            if (!process.isAlive()) {
                throw new AssertionError("runner exited (" + process.exitValue() + ") before printing '" + text + "':\n" + output());
            }
            sleep(100);
        }
        throw new AssertionError("runner did not print '" + text + "' within " + timeout + ":\n" + output() + "\n" + ownThreads());
    }

    public RunnerProcess awaitReady() {
        return awaitOutput("chat-intake ready", Duration.ofSeconds(90));
    }

    /**
     * A GET, sent again once when the connection closed before any answer, as a readiness probe
     * would be: once in many CI runs the first request to a runner that had just printed "ready"
     * read EOF on a fresh connection (printed here when it happens).
     */
    public HttpResponse<String> get(String path, String... headerNamesAndValues) {
        HttpRequest.Builder builder = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + path))
                .timeout(Duration.ofSeconds(10)).GET();
        if (headerNamesAndValues.length > 0) {
            builder.headers(headerNamesAndValues);
        }
        HttpRequest request = builder.build();
        try {
            try {
                return http.send(request, HttpResponse.BodyHandlers.ofString());
            } catch (IOException e) {
                System.err.println("GET " + path + " on port " + httpPort + " read no answer (" + e.getMessage() + "); sending it again");
                sleep(200);
                return http.send(request, HttpResponse.BodyHandlers.ofString());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    public HttpResponse<String> post(String path, byte[] body) {
        try {
            return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + path))
                    .timeout(Duration.ofSeconds(10)).POST(HttpRequest.BodyPublishers.ofByteArray(body)).build(),
                    HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    public int httpPort() {
        return httpPort;
    }

    public long pid() {
        return process.pid();
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    /** SIGTERM, then the exit code. */
    public int terminate(Duration timeout) {
        process.destroy();
        return awaitExit(timeout);
    }

    /** {@code kill -9}: no shutdown hook runs, the embedded postgres child is left behind. */
    public void kill9() {
        process.destroyForcibly();
        awaitExit(Duration.ofSeconds(30));
    }

    public int awaitExit(Duration timeout) {
        try {
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new AssertionError("runner did not exit within " + timeout + ":\n" + output());
            }
            return process.exitValue();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /**
     * What each runner still running is doing, for a wait that timed out: its threads in
     * chat-intake's code or named for its work, and the end of its log.
     */
    public static String diagnostics() {
        StringBuilder out = new StringBuilder();
        for (RunnerProcess runner : LIVE) {
            if (runner.isAlive()) {
                List<String> lines = runner.output().lines().toList();
                out.append("\n--- runner ").append(runner.pid()).append(", its threads:\n").append(runner.ownThreads())
                        .append("\n--- its log, last 150 lines:\n")
                        .append(String.join("\n", lines.subList(Math.max(0, lines.size() - 150), lines.size())));
            }
        }
        return out.toString();
    }

    private String ownThreads() {
        try {
            Process jcmd = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "jcmd").toString(), Long.toString(pid()),
                    "Thread.print").redirectErrorStream(true).start();
            String dump = new String(jcmd.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            jcmd.waitFor(30, TimeUnit.SECONDS);
            return Arrays.stream(dump.split("\n\n"))
                    .filter(thread -> thread.contains("io.chatintake") || thread.startsWith("\"work-") || thread.startsWith("\"telegram"))
                    .collect(Collectors.joining("\n\n"));
        } catch (IOException e) {
            return "(no thread dump: " + e.getMessage() + ")";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "(no thread dump: interrupted)";
        }
    }

    /** Stops an embedded postgres a killed runner left behind, so a failed test leaves no server running. */
    private void stopLeftoverPostgres() {
        try {
            List<String> pidFile = Files.readAllLines(dataDir.resolve("pg/postmaster.pid"));
            ProcessHandle.of(Long.parseLong(pidFile.get(0).trim())).ifPresent(ProcessHandle::destroy);
        } catch (IOException | RuntimeException e) {
            // nothing left behind
        }
    }

    @Override
    public void close() {
        LIVE.remove(this);
        if (!process.isAlive()) {
            stopLeftoverPostgres();
        }
        if (process.isAlive()) {
            process.destroy();
            try {
                if (!process.waitFor(60, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
