package io.chatintake.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.RunnerProcess;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Java DSL route files in a running runner's routes directory: compiled at start and when one is
 * added; one that does not compile (or a YAML file that does not parse) is one line naming it and
 * its first error, and every other route keeps serving.
 */
class JavaRouteFilesIT {
    @TempDir
    Path work;

    @Test
    void aDroppedJavaRouteAnswersAndABrokenOneIsReportedInOneLineWhileTheRestServe() throws Exception {
        Map<String, String> env = RunnerProcess.baseEnv(work);
        Path routes = Files.createDirectories(work.resolve("routes"));
        Files.writeString(routes.resolve("first.yaml"), """
                - route:
                    id: first
                    from:
                      uri: "platform-http:/first"
                      steps:
                        - removeHeaders:
                            pattern: "*"
                        - setBody:
                            constant: "yaml"
                """);
        Files.writeString(routes.resolve("BrokenAtStart.java"), broken("BrokenAtStart"));
        Files.writeString(routes.resolve("broken.yaml"), "- route:\n    id: [unclosed\n");
        try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
            assertThat(runner.output()).as("reported at start, in one line")
                    .containsPattern("routes: file:\\S*BrokenAtStart\\.java not loaded, its routes do not run: \\S*BrokenAtStart\\.java:\\d+: error: ")
                    .containsPattern("routes: file:\\S*broken\\.yaml not loaded, its routes do not run: ")
                    .doesNotContain("\tat ");
            assertThat(runner.get("/first").body()).isEqualTo("yaml");

            Files.writeString(routes.resolve("Dropped.java"), """
                    import org.apache.camel.builder.RouteBuilder;

                    public class Dropped extends RouteBuilder {
                        @Override
                        public void configure() {
                            from("platform-http:/dropped").routeId("dropped").removeHeaders("*").setBody(constant("java"));
                        }
                    }
                    """);
            HttpResponse<String> dropped = awaitAnswer(runner, "/dropped", Duration.ofSeconds(30));
            assertThat(dropped.statusCode()).as(runner.output()).isEqualTo(200);
            assertThat(dropped.body()).isEqualTo("java");

            Files.writeString(routes.resolve("BrokenLater.java"), broken("BrokenLater"));
            // Checked before it is loaded (RouteReloadGate): refused in one line naming its first error.
            runner.awaitOutput("BrokenLater.java refused", Duration.ofSeconds(30));
            assertThat(runner.output().lines().filter(l -> l.contains("BrokenLater.java refused"))).hasSize(1)
                    .allMatch(l -> l.matches(".*BrokenLater\\.java:\\d+: does not compile: .*"));
            assertThat(runner.output()).doesNotContain("\tat ");
            assertThat(runner.get("/first").body()).isEqualTo("yaml");
            assertThat(runner.get("/dropped").body()).isEqualTo("java");
        }
    }

    private static String broken(String name) {
        return """
                import org.apache.camel.builder.RouteBuilder;

                public class %s extends RouteBuilder {
                    @Override
                    public void configure() {
                        from("platform-http:/%s").setBody(constant("never"))   // missing semicolon
                    }
                }
                """.formatted(name, name.toLowerCase());
    }

    private static HttpResponse<String> awaitAnswer(RunnerProcess runner, String path, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        HttpResponse<String> response = runner.get(path);
        while (response.statusCode() != 200 && System.nanoTime() < deadline) {
            Thread.sleep(100);
            response = runner.get(path);
        }
        return response;
    }
}
