package io.chatintake.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.Await;
import io.chatintake.testkit.RunnerProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The jar running: a route file saved with a mistake {@code routes check} finds is refused in one
 * line and its running version keeps answering; the next good version is loaded.
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

            Files.writeString(greeting, greeting("v2", "?httpMethodRestrct=GET"));
            runner.awaitOutput("greeting.yaml refused", WAIT);
            assertThat(runner.output()).contains("greeting.yaml refused, not reloaded: its running routes stay as they were: "
                    + greeting.toAbsolutePath() + ":4: platform-http: unknown option 'httpMethodRestrct'");
            assertThat(runner.get("/greeting").body()).as("the running version").isEqualTo("v1");

            Files.writeString(greeting, greeting("v3", "?httpMethodRestrict=GET"));
            Await.until("the next good version answers", WAIT, () -> "v3".equals(runner.get("/greeting").body()));
            assertThat(runner.output().lines().filter(line -> line.contains("greeting.yaml refused"))).as("said once").hasSize(1);
            assertThat(runner.output()).doesNotContain("\tat ");
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
