package io.chatintake.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.Await;
import io.chatintake.testkit.RunnerProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The jar running: a route file saved (or updated through a ConfigMap) with a mistake
 * {@code routes check} finds is refused in one line and its running version keeps answering; the
 * next good version is loaded.
 */
class RouteReloadCheckIT {
    private static final Duration WAIT = Duration.ofSeconds(60);

    @TempDir
    Path work;

    @Test
    void aFileMadeInvalidIsRefusedAndTheRunningVersionKeepsServing() throws Exception {
        Map<String, String> env = RunnerProcess.baseEnv(work);
        Path greeting = Files.createDirectories(work.resolve("routes")).resolve("greeting.yaml");
        Files.writeString(greeting, greeting("v1", ""));
        try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
            assertThat(runner.get("/greeting").body()).isEqualTo("v1");

            save(greeting, greeting("v2", "?httpMethodRestrct=GET"));
            runner.awaitOutput("greeting.yaml refused", WAIT);
            assertThat(runner.output()).contains("greeting.yaml refused, not reloaded: its running routes stay as they were: "
                    + greeting.toAbsolutePath() + ":4: platform-http: unknown option 'httpMethodRestrct'");
            assertThat(runner.get("/greeting").body()).as("the running version").isEqualTo("v1");

            save(greeting, greeting("v3", "?httpMethodRestrict=GET"));
            Await.until("the next good version answers", WAIT, () -> "v3".equals(runner.get("/greeting").body()));
            assertThat(runner.output().lines().filter(line -> line.contains("greeting.yaml refused"))).as("said once").hasSize(1);
            assertThat(runner.output()).doesNotContain("\tat ");
        }
    }

    /**
     * Saves as an editor does, whole: a file truncated and then written can be seen empty in
     * between, which the reload refuses too, and the test counts refusals.
     */
    private void save(Path file, String content) throws Exception {
        Path saving = Files.writeString(work.resolve(file.getFileName() + ".saving"), content);
        Files.move(saving, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    /** A ConfigMap volume (files linked through ..data) updated with an invalid version, as the kubelet swaps it in. */
    @Test
    void aConfigMapUpdateWithAnInvalidFileIsRefusedAndTheRunningVersionKeepsServing() throws Exception {
        Map<String, String> env = RunnerProcess.baseEnv(work);
        Path routes = Files.createDirectories(work.resolve("routes"));
        Path first = Files.createDirectories(routes.resolve("..2026_12_06_10_00_00.1"));
        Files.writeString(first.resolve("greeting.yaml"), greeting("v1", ""));
        Files.createSymbolicLink(routes.resolve("..data"), first.getFileName());
        Files.createSymbolicLink(routes.resolve("greeting.yaml"), Path.of("..data/greeting.yaml"));
        try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
            assertThat(runner.get("/greeting").body()).isEqualTo("v1");

            Path second = Files.createDirectories(routes.resolve("..2026_12_06_10_05_00.2"));
            Files.writeString(second.resolve("greeting.yaml"), greeting("v2", "").replace("removeHeaders", "removeHeaderz"));
            Files.createSymbolicLink(routes.resolve("..data_tmp"), second.getFileName());
            Files.move(routes.resolve("..data_tmp"), routes.resolve("..data"), StandardCopyOption.ATOMIC_MOVE);

            runner.awaitOutput("greeting.yaml refused", WAIT);
            assertThat(runner.output()).contains("does not load: Unknown node id: removeHeaderz")
                    .doesNotContain("reloaded greeting.yaml after a ConfigMap update");
            assertThat(runner.get("/greeting").body()).as("the running version").isEqualTo("v1");
        }
    }

    private static String greeting(String body, String options) {
        return """
                - route:
                    id: greeting
                    from:
                      uri: "platform-http:/greeting%s"
                      steps:
                        - removeHeaders:
                            pattern: "*"
                        - setBody:
                            constant: "%s"
                """.formatted(options, body);
    }
}
