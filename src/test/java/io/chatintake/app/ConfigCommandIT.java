package io.chatintake.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.RunnerProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code java -jar chat-intake.jar config}, as an operator pastes its output into a ticket. */
class ConfigCommandIT {
    @TempDir
    Path work;

    @Test
    void aPasswordInTheDatabaseUrlIsNotPrinted() {
        Map<String, String> env = RunnerProcess.baseEnv(work);
        env.put("CHAT_INTAKE_DB_URL", "jdbc:postgresql://intake:UrlPass-7f3@db.example:5432/chat?sslmode=require&password=ParamPass-9c1");
        try (RunnerProcess config = RunnerProcess.start(work, env, "config")) {
            assertThat(config.awaitExit(Duration.ofSeconds(60))).as(config.output()).isZero();
            assertThat(config.output())
                    .contains("chat-intake.db.url=jdbc:postgresql://intake:[redacted]@db.example:5432/chat?sslmode=require&password=[redacted]")
                    .doesNotContain("UrlPass-7f3", "ParamPass-9c1");
        }
    }

    @Test
    void aKeyARouteNamesAsItsSecretsIsRedactedWhateverItsName() throws Exception {
        Path routes = Files.createDirectories(work.resolve("routes"));
        Files.writeString(routes.resolve("acme.yaml"), Files.readString(Path.of("routes/whatsapp.yaml"))
                .replace("secretsKey: whatsapp.app-secrets", "secretsKey: acme.hmac-keys"));
        Path config = work.resolve("application.properties");
        Files.writeString(config, Files.readString(Path.of("config/application.properties")) + "acme.hmac-keys=AcmeKey-5e2,AcmeKey-8a0\n");
        Map<String, String> env = RunnerProcess.baseEnv(work);
        env.put("CHAT_INTAKE_CONFIG", config.toString());
        try (RunnerProcess command = RunnerProcess.start(work, env, "config")) {
            assertThat(command.awaitExit(Duration.ofSeconds(60))).as(command.output()).isZero();
            assertThat(command.output()).contains("acme.hmac-keys=[redacted]").doesNotContain("AcmeKey-5e2", "AcmeKey-8a0");
        }
    }

    @Test
    void eachValueSaysWhereItCameFromBuiltInConfigFileOrEnvironment() throws Exception {
        Path file = Files.writeString(work.resolve("application.properties"), "work.max-attempts=3\n");
        Map<String, String> env = RunnerProcess.baseEnv(work);
        env.put("CHAT_INTAKE_CONFIG", file.toString());
        env.put("WORK_CONCURRENCY", "3");
        try (RunnerProcess config = RunnerProcess.start(work, env, "config")) {
            assertThat(config.awaitExit(Duration.ofSeconds(60))).as(config.output()).isZero();
            assertThat(config.output())
                    .contains("configuration file: " + file)
                    .contains("work.concurrency=3 (environment)")
                    .contains("work.max-attempts=3 (config file)")
                    .contains("retention.batch-size=1000 (built-in)");
        }
    }
}
