package io.chatintake.ops.bench;

import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * {@code bench start}: time from launching the jar to "chat-intake ready" on a warm data dir
 * (embedded PostgreSQL already initialised, migrations applied), split by the runner's own log
 * lines so the biggest phase is named. Three warm starts; the median must be under 5 s.
 */
public final class StartBenchmark {
    private static final Duration TARGET = Duration.ofSeconds(5);
    private static final int WARM_STARTS = 3;
    private static final DateTimeFormatter LOG_TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSS");
    /** Log lines that end each phase, in order (app/Runner, store/Database). */
    private static final Map<String, String> PHASES = phases();

    private final PrintStream out;

    public StartBenchmark(PrintStream out) {
        this.out = out;
    }

    private static Map<String, String> phases() {
        Map<String, String> phases = new LinkedHashMap<>();
        phases.put("JVM start, configuration", "chat-intake ");
        phases.put("embedded PostgreSQL start", "database: embedded PostgreSQL 15 in ");
        phases.put("migrations", "migrations: ");
        phases.put("Camel: components, routes, HTTP, dispatcher", "chat-intake ready");
        return phases;
    }

    public int run() throws Exception {
        Path dir = Files.createTempDirectory("chat-intake-bench-start");
        try {
            return run(dir);
        } finally {
            BenchDatabase.deleteTree(dir);
        }
    }

    private int run(Path dir) throws Exception {
        Map<String, String> env = Map.of("CHAT_INTAKE_DATA_DIR", dir.resolve("data").toString());
        try (BenchRunner first = BenchRunner.start(dir.resolve("cold"), env)) {
            out.println("cold start (initdb, migrations) done; now " + WARM_STARTS + " warm starts on the same data dir");
        }
        List<Map<String, Duration>> starts = new ArrayList<>();
        for (int i = 0; i < WARM_STARTS; i++) {
            Instant launched = Instant.now();
            try (BenchRunner runner = BenchRunner.launch(dir.resolve("warm"), env)) {
                runner.awaitReady();
                starts.add(split(launched, runner.logText()));
            }
        }
        starts.sort((a, b) -> total(a).compareTo(total(b)));
        Map<String, Duration> median = starts.get(starts.size() / 2);
        out.println("warm start, median of " + WARM_STARTS + " (launch -> log line):");
        median.forEach((phase, took) -> out.printf("  %-46s %5d ms%n", phase, took.toMillis()));
        String dominant = median.entrySet().stream().max(Map.Entry.comparingByValue()).map(Map.Entry::getKey).orElse("?");
        Duration total = total(median);
        out.printf("ready after %d ms (target < %d ms): %s; the largest part: %s%n", total.toMillis(), TARGET.toMillis(),
                total.compareTo(TARGET) < 0 ? "met" : "NOT met", dominant);
        return total.compareTo(TARGET) < 0 ? 0 : 1;
    }

    private static Duration total(Map<String, Duration> split) {
        return split.values().stream().reduce(Duration.ZERO, Duration::plus);
    }

    private static Map<String, Duration> split(Instant launched, String log) {
        Map<String, Duration> split = new LinkedHashMap<>();
        Instant previous = launched;
        for (Map.Entry<String, String> phase : PHASES.entrySet()) {
            Optional<Instant> at = lineTime(log, phase.getValue());
            if (at.isPresent()) {
                split.put(phase.getKey(), Duration.between(previous, at.get()));
                previous = at.get();
            }
        }
        return split;
    }

    private static Optional<Instant> lineTime(String log, String marker) {
        for (String line : log.split("\n")) {
            int at = line.indexOf(" - " + marker);
            if (at > 0 && line.length() >= 23) {
                try {
                    return Optional.of(LocalDateTime.parse(line.substring(0, 23), LOG_TIME).atZone(ZoneId.systemDefault()).toInstant());
                } catch (java.time.format.DateTimeParseException e) {
                    // not a log line of ours
                }
            }
        }
        return Optional.empty();
    }
}
