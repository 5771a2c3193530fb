package io.chatintake.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Secret;
import io.chatintake.sim.BotApiSimulator;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The product as a plug-in: camel-main's own {@code org.apache.camel.main.Main} with the jar on the
 * classpath and only properties (no chat-intake launcher on the call path) runs the shipped
 * routes, which store a signed UnifyPort delivery and a polled Telegram update, and stops cleanly.
 */
class CamelMainPluginIT {
    private static final String SECRET = "plugin-signing-secret";

    @TempDir
    Path work;

    @Test
    void camelMainsOwnMainRunsTheShippedRoutesThroughTheConfigurationClass() throws Exception {
        try (BotApiSimulator telegram = BotApiSimulator.start()) {
            String token = telegram.addBot(8080_01, "FAKE-plugin-token", "plugin_bot");
            telegram.enqueueText(token, 42, "polled by camel-main's Main");
            Map<String, String> env = RunnerProcess.pollingEnv(work, telegram.url(), token);
            env.put("UNIFYPORT_SIGNING_SECRETS", SECRET);
            Path config = Path.of("config/application.properties").toAbsolutePath();

            try (RunnerProcess main = RunnerProcess.startCamelMain(work, env,
                    "-Dcamel.main.property-placeholder-location=file:" + config,
                    "-Dcamel.main.configuration-classes=io.chatintake.app.CamelConfiguration").awaitReady()) {
                DataSource db = RunnerProcess.embeddedDatabase(env);
                assertThat(main.output()).contains("migrations: schema at version").contains("routes: ")
                        .contains("unifyport-webhook").contains("telegram-main");

                SignedDeliverySender sender = new SignedDeliverySender(
                        URI.create("http://127.0.0.1:" + main.httpPort() + "/webhooks/unifyport"), Secret.of(SECRET));
                byte[] body = SignedDeliverySender.envelope("evt_plugin_1", "conversation.updated", "line", "acct-1", Instant.now(), "{}");
                SignedDeliverySender.Response stored = sender.post(sender.sign("evt_plugin_1", body, SignedDeliverySender.TimestampForm.RFC3339));
                assertThat(stored.status()).as(stored.body()).isEqualTo(200);
                assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event WHERE event_id = 'evt_plugin_1'")).isEqualTo(1);

                Await.until("the polled update stored", Duration.ofSeconds(30),
                        () -> Sql.count(db, "SELECT count(*) FROM telegram_update WHERE payload->'message'->>'text' = 'polled by camel-main''s Main'") == 1);
                long postgresPid = Long.parseLong(Files.readAllLines(work.resolve("data/pg/postmaster.pid")).get(0).trim());

                int exit = main.terminate(Duration.ofSeconds(60));

                assertThat(exit).as(main.output()).isIn(0, 143);
                assertThat(main.output()).contains("chat-intake stopped").doesNotContain("\tat ");
                Await.until("the embedded postgres stopped with camel-main", Duration.ofSeconds(10),
                        () -> !ProcessHandle.of(postgresPid).map(ProcessHandle::isAlive).orElse(false));
            }
        }
    }
}
