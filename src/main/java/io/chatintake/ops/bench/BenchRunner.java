package io.chatintake.ops.bench;

import io.chatintake.config.ConfigurationException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.lang.management.ThreadMXBean;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.management.JMException;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * The product as the benchmarks measure it: this very jar run as a child process ({@code run},
 * shipped {@code routes/}, the work dispatcher), so a rate is the one an operator gets, handlers
 * and all. Its output goes to a log file whose timestamps the start benchmark reads; its heap is
 * read over JMX on loopback.
 */
final class BenchRunner implements AutoCloseable {
    private static final Duration READY_WAIT = Duration.ofSeconds(120);
    /** Share of a round's time the runner's compilers may still work for its JIT to count as settled. */
    private static final double SETTLED = 0.05;
    /** The histogram's last line: {@code Total <instances> <bytes>}. */
    private static final Pattern HISTOGRAM_TOTAL = Pattern.compile("(?m)^Total\\s+\\d+\\s+(\\d+)");
    /** A heap count that fell by less than this since the previous one has settled. */
    private static final long HEAP_SETTLED_BYTES = 1 << 20;
    private static final int MAX_HEAP_ROUNDS = 5;

    private final Process process;
    private final Path log;
    private final int httpPort;
    private final int jmxPort;

    private BenchRunner(Process process, Path log, int httpPort, int jmxPort) {
        this.process = process;
        this.log = log;
        this.httpPort = httpPort;
        this.jmxPort = jmxPort;
    }

    /**
     * Starts the runner with the given settings (the environment's own CHAT_INTAKE_*, TELEGRAM_*
     * and UNIFYPORT_* are removed) and waits for "chat-intake ready".
     */
    static BenchRunner start(Path workDir, Map<String, String> env) throws IOException, InterruptedException {
        BenchRunner runner = launch(workDir, env);
        runner.awaitReady();
        return runner;
    }

    static BenchRunner launch(Path workDir, Map<String, String> env) throws IOException {
        if (!Files.isDirectory(Path.of("routes")) || !Files.isRegularFile(Path.of("config/application.properties"))) {
            throw new ConfigurationException("benchmarks run the shipped routes/ and config/application.properties:"
                    + " start them in the directory that holds both (the repository root)");
        }
        Files.createDirectories(workDir);
        Path log = Files.createTempFile(workDir, "runner-", ".log");
        int httpPort = freePort();
        int jmxPort = freePort();
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx512m",
                "-Dcom.sun.management.jmxremote.port=" + jmxPort,
                "-Dcom.sun.management.jmxremote.rmi.port=" + jmxPort,
                "-Dcom.sun.management.jmxremote.host=127.0.0.1",
                "-Djava.rmi.server.hostname=127.0.0.1",
                "-Dcom.sun.management.jmxremote.authenticate=false",
                "-Dcom.sun.management.jmxremote.ssl=false",
                "-cp", jar().toString(), "io.chatintake.app.Main", "run"));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        // The caller's WORK_* settings pass through: WORK_CONCURRENCY=0 measures intake with no handlers running.
        builder.environment().keySet().removeIf(k -> k.startsWith("CHAT_INTAKE_") || k.startsWith("TELEGRAM_")
                || k.startsWith("UNIFYPORT_"));
        builder.environment().put("CHAT_INTAKE_CONFIG", Path.of("config/application.properties").toAbsolutePath().toString());
        builder.environment().put("CHAT_INTAKE_HTTP_PORT", Integer.toString(httpPort));
        builder.environment().put("CHAT_INTAKE_HTTP_HOST", "127.0.0.1");
        builder.environment().put("CHAT_INTAKE_ROUTES_DIR", Path.of("routes").toAbsolutePath().toString());
        builder.environment().put("CHAT_INTAKE_ROUTES_RELOAD", "false");
        builder.environment().putAll(env);
        return new BenchRunner(builder.start(), log, httpPort, jmxPort);
    }

    void awaitReady() throws IOException, InterruptedException {
        long deadline = System.nanoTime() + READY_WAIT.toNanos();
        while (!logText().contains("chat-intake ready")) {
            if (!process.isAlive()) {
                throw new ConfigurationException("the runner under test exited with " + process.exitValue() + "; its log: " + log);
            }
            if (System.nanoTime() > deadline) {
                throw new ConfigurationException("the runner under test was not ready within " + READY_WAIT.toSeconds() + " s; its log: " + log);
            }
            Thread.sleep(20);
        }
    }

    String logText() throws IOException {
        return Files.readString(log);
    }

    Path log() {
        return log;
    }

    int httpPort() {
        return httpPort;
    }

    ProcessHandle handle() {
        return process.toHandle();
    }

    /** Heap in use right after a full collection in the runner, in bytes. */
    long heapAfterGc() throws IOException {
        try (JMXConnector connector = jmx()) {
            return heapLeftByCollection(connector.getMBeanServerConnection());
        }
    }

    /** Heap in use now, garbage included: read without a collection, which would stall a runner under load. */
    long heapInUse() throws IOException {
        try (JMXConnector connector = jmx()) {
            return ManagementFactory.newPlatformMXBeanProxy(connector.getMBeanServerConnection(), ManagementFactory.MEMORY_MXBEAN_NAME,
                    MemoryMXBean.class).getHeapMemoryUsage().getUsed();
        }
    }

    /** The runner's resident set as Linux counts it ({@code VmRSS}), or -1 where /proc does not say. */
    long residentBytes() {
        try (Stream<String> status = Files.lines(Path.of("/proc", Long.toString(process.pid()), "status"))) {
            return status.filter(line -> line.startsWith("VmRSS:")).findFirst()
                    .map(line -> Long.parseLong(line.replaceAll("\\D", "")) * 1024).orElse(-1L);
        } catch (IOException | UncheckedIOException e) {
            return -1;
        }
    }

    /** The runner's log lines so far that contain {@code text}. */
    long logLinesContaining(String text) throws IOException {
        // Read as bytes: a line cut by a write in progress must not fail the count.
        try (Stream<String> lines = Files.lines(log, StandardCharsets.ISO_8859_1)) {
            return lines.filter(line -> line.contains(text)).count();
        }
    }

    /** Live threads of the runner. */
    int threadCount() throws IOException {
        try (JMXConnector connector = jmx()) {
            return ManagementFactory.newPlatformMXBeanProxy(connector.getMBeanServerConnection(), ManagementFactory.THREAD_MXBEAN_NAME,
                    ThreadMXBean.class).getThreadCount();
        }
    }

    /** One round of load on the runner. */
    @FunctionalInterface
    interface Round {
        void run() throws Exception;
    }

    /**
     * What warming up took: the rounds run, and the time the runner's compilers worked during the
     * last one as a share of it (summed over the compiler threads, so it can exceed 1).
     */
    record Warmed(int rounds, double compiling) {
        String describe() {
            return compiling < SETTLED ? "its JIT settled" : "its JIT still compiling %.0f %% of the time".formatted(compiling * 100);
        }
    }

    /**
     * Runs rounds of load until the runner's JIT has settled: until a round during which its
     * compilers worked less than {@link #SETTLED} of the time, or {@code maxRounds}. On 2 cores the
     * one C2 thread still took 0.4-0.7 of a core through the first ~25,000 webhook deliveries, so a
     * runner measured before that is measured compiling itself, not running, and a runner in
     * production runs for days.
     */
    Warmed warmUntilCompiled(int maxRounds, Round round) throws Exception {
        try (JMXConnector connector = jmx()) {
            CompilationMXBean jit = ManagementFactory.newPlatformMXBeanProxy(connector.getMBeanServerConnection(),
                    ManagementFactory.COMPILATION_MXBEAN_NAME, CompilationMXBean.class);
            for (int rounds = 1; ; rounds++) {
                long compiledBefore = jit.getTotalCompilationTime();
                long start = System.nanoTime();
                round.run();
                double compiling = (jit.getTotalCompilationTime() - compiledBefore) / ((System.nanoTime() - start) / 1e6);
                if (compiling < SETTLED || rounds == maxRounds) {
                    return new Warmed(rounds, compiling);
                }
            }
        }
    }

    private JMXConnector jmx() throws IOException {
        return JMXConnectorFactory.connect(new JMXServiceURL("service:jmx:rmi:///jndi/rmi://127.0.0.1:" + jmxPort + "/jmxrmi"));
    }

    /**
     * The bytes of the objects still reachable, counted by a class histogram, which collects first:
     * exactly what the JVM keeps. The heap read after a collection would also count what a busy
     * JVM allocated since, and the pools' after-collection figures may come from different
     * collections, so they read high by the size of a young generation on some runs.
     * A collection and a finalization run go first: what a finalizable object holds outlives the
     * first collection that finds it unreachable (javac leaves the zip file system over the
     * runner's jar that way after compiling {@code routes/*.java}). The finalization run may come
     * before the collected objects are queued for it, so the three are repeated until the count
     * no longer falls.
     */
    static long heapLeftByCollection(MBeanServerConnection server) throws IOException {
        try {
            ObjectName diagnostics = new ObjectName("com.sun.management:type=DiagnosticCommand");
            Object[] noArguments = {new String[0]};
            String[] signature = {String[].class.getName()};
            long last = Long.MAX_VALUE;
            for (int round = 0; ; round++) {
                server.invoke(diagnostics, "gcRun", noArguments, signature);
                server.invoke(diagnostics, "gcRunFinalization", noArguments, signature);
                String histogram = (String) server.invoke(diagnostics, "gcClassHistogram", noArguments, signature);
                Matcher total = HISTOGRAM_TOTAL.matcher(histogram);
                if (!total.find()) {
                    throw new IOException("the class histogram has no total line");
                }
                long now = Long.parseLong(total.group(1));
                if (last - now < HEAP_SETTLED_BYTES || round == MAX_HEAP_ROUNDS) {
                    return now;
                }
                last = now;
            }
        } catch (JMException e) {
            throw new IOException("class histogram not taken: " + e.getMessage(), e);
        }
    }

    /** SIGTERM and wait: the runner's own clean stop. */
    @Override
    public void close() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(90, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }

    /** The jar that runs the bench, or the one {@code -Dchat-intake.jar} names: tests run benches from their classes. */
    private static Path jar() {
        String named = System.getProperty("chat-intake.jar");
        if (named != null) {
            return Path.of(named).toAbsolutePath();
        }
        try {
            Path jar = Path.of(BenchRunner.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            if (!Files.isRegularFile(jar)) {
                throw new ConfigurationException("benchmarks run the product as a child process: start them from the jar"
                        + " (java -jar target/chat-intake.jar bench ...), not from " + jar);
            }
            return jar;
        } catch (java.net.URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    static int freePort() {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
