package io.chatintake.channel.unifyport;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Secret;
import io.chatintake.support.CrashPoint;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.Delivery;
import io.chatintake.sim.SignedDeliverySender.Response;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The packaged jar with the shipped route files, as an operator runs it. */
class UnifyPortWebhookIT {
    private static final String SECRET = "whk_it_secret_7f3a9c";
    private static final String SIGNED_URL = "https://media.unifyport.example/f/abc?X-Signature=SIGNEDURLVALUE42";
    private static final String REPLY_TOKEN = "rt_REPLYTOKENVALUE42";
    private static final String AUTH_PAYLOAD = "AUTHPAYLOADVALUE42";

    @TempDir
    Path work;

    @Test
    void aFullScenarioOnTheRealJarStoresSignedEventsAndLogsNoSecret() throws Exception {
        Map<String, String> env = env();
        env.put("UNIFYPORT_SIGNING_SECRETS", "old_secret_retired_soon," + SECRET);
        // Even at DEBUG nothing secret may reach the output.
        env.put("CHAT_INTAKE_LOG_LEVEL", "DEBUG");
        List<String> sentSignatures = new ArrayList<>();
        try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
            SignedDeliverySender sender = new SignedDeliverySender(
                    URI.create("http://127.0.0.1:" + runner.httpPort() + "/webhooks/unifyport"), Secret.of(SECRET));
            Instant now = Instant.now();
            byte[] received = SignedDeliverySender.envelope("evt_it_1", "message.received", "whatsapp", "acc_1", now,
                    "{\"conversation\":{\"id\":\"c1\",\"type\":\"user\"},\"message\":{\"id\":\"m1\",\"type\":\"image\","
                            + "\"caption\":\"look\",\"reply_token\":\"" + REPLY_TOKEN + "\",\"attachments\":[{\"url\":\"" + SIGNED_URL
                            + "\"}],\"album\":{\"id\":\"alb_1\",\"index\":1,\"total\":2}}}");
            byte[] authRequired = SignedDeliverySender.envelope("evt_it_2", "account.auth.required", "telegram", "acc_2", now,
                    "{\"auth_payload\":\"" + AUTH_PAYLOAD + "\"}");

            Delivery first = sender.sign("evt_it_1", received, TimestampForm.RFC3339);
            Delivery auth = sender.sign("evt_it_2", authRequired, TimestampForm.UNIX_SECONDS);
            Delivery retry = sender.sign("evt_it_1", received, TimestampForm.UNIX_SECONDS);
            Delivery raw = sender.sign("evt_it_3", "<xml>not json</xml>".getBytes(StandardCharsets.UTF_8), TimestampForm.RFC3339);
            for (Delivery d : List.of(first, auth, retry, raw)) {
                sentSignatures.add(d.signature());
                Response response = sender.post(d);
                assertThat(response.status()).as(response.body()).isEqualTo(200);
                assertThat(response.body()).doesNotContain(SECRET, d.signature());
            }
            Response forged = sender.post(first.withBody(authRequired));
            assertThat(forged.status()).isEqualTo(401);
            assertThat(forged.body()).isEqualTo("{\"error\":\"bad_signature\"}");

            // Handled in any order by the dispatcher's workers: each awaited.
            runner.awaitOutput("unifyport event evt_it_1 type message.received provider whatsapp", Duration.ofSeconds(10));
            runner.awaitOutput("unifyport event evt_it_2 type account.auth.required provider telegram", Duration.ofSeconds(10));
            String metrics = runner.get("/observe/metrics").body();
            assertThat(metrics).contains("chat_intake_webhook_deliveries_total{channel=\"unifyport\",outcome=\"stored\",status=\"200\",workspace=\"default\"} 3.0")
                    .contains("outcome=\"duplicate\",status=\"200\"")
                    .contains("outcome=\"bad_signature\",status=\"401\"");
            assertThat(runner.terminate(Duration.ofSeconds(60))).isIn(0, 143);

            String output = runner.output();
            assertThat(output).contains("unifyport webhook: on for workspace default: 2 signing secret(s)")
                    .contains("unifyport event evt_it_1 type message.received provider whatsapp")
                    .doesNotContain(SECRET, "old_secret_retired_soon", SIGNED_URL, "SIGNEDURLVALUE42", REPLY_TOKEN,
                            AUTH_PAYLOAD, first.timestamp() + ".{")
                    .doesNotContain("\tat ");
            for (String signature : sentSignatures) {
                assertThat(output).doesNotContain(signature);
            }
        }
    }

    @Test
    void aRunnerKilledRightAfterTheCommitLeavesTheEventUnderivedAndTheNextRunnerHandlesItOnce() throws Exception {
        Map<String, String> env = env();
        env.put("UNIFYPORT_SIGNING_SECRETS", SECRET);
        DataSource db = RunnerProcess.embeddedDatabase(env);
        Map<String, String> crashing = new HashMap<>(env);
        crashing.put("CHAT_INTAKE_TEST_CRASH_AT", CrashPoint.WEBHOOK_AFTER_COMMIT);
        byte[] body = SignedDeliverySender.envelope("evt_crash", "message.received", "whatsapp", "acc_1", Instant.now(),
                "{\"conversation\":{\"id\":\"c1\",\"type\":\"user\"},\"message\":{\"id\":\"m1\",\"type\":\"text\",\"text\":\"hi\"}}");
        // Not closed: closing a runner that has exited stops the postgres it leaves behind, which the next one takes over.
        RunnerProcess crashed = RunnerProcess.start(work, crashing).awaitReady();
        SignedDeliverySender first = new SignedDeliverySender(
                URI.create("http://127.0.0.1:" + crashed.httpPort() + "/webhooks/unifyport"), Secret.of(SECRET));
        Delivery delivery = first.sign("evt_crash", body, TimestampForm.RFC3339);
        assertThat(first.post(delivery).status()).as("no answer: the runner died first").isZero();
        assertThat(crashed.awaitExit(Duration.ofSeconds(30))).as(crashed.output()).isEqualTo(137);
        assertThat(crashed.output()).contains("crash point " + CrashPoint.WEBHOOK_AFTER_COMMIT + " reached");
        // The orphaned postgres still runs: the event survived, not derived yet; no child, no work item was written.
        assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event WHERE event_id = 'evt_crash' AND derived_at IS NULL")).isEqualTo(1);
        assertThat(Sql.count(db, "SELECT count(*) FROM channel_message")).isZero();
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item")).isZero();

        try (RunnerProcess resumed = RunnerProcess.start(work, env).awaitReady()) {
            SignedDeliverySender sender = new SignedDeliverySender(
                    URI.create("http://127.0.0.1:" + resumed.httpPort() + "/webhooks/unifyport"), Secret.of(SECRET));
            // UnifyPort retries what it got no answer for.
            assertThat(sender.post(delivery).body()).isEqualTo("{\"status\":\"duplicate\"}");
            resumed.awaitOutput("unifyport event evt_crash type message.received", Duration.ofSeconds(20));
            Await.until("handled", Duration.ofSeconds(20),
                    () -> Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'unifyport-event' AND state = 'done'") == 1);
            assertThat(Sql.count(db, "SELECT count(*) FROM work_item")).as("one work item, however often delivered").isEqualTo(1);
            assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event WHERE derived_at IS NULL")).isZero();
            assertThat(Sql.count(db, "SELECT count(*) FROM channel_message")).as("its child once").isEqualTo(1);
            assertThat(Pattern.compile("unifyport event evt_crash ").matcher(resumed.output()).results().count()).isEqualTo(1);
        }
    }

    @Test
    void deliveriesWhileTheRunnerStartsAreRetriedNeverRefused404() throws Exception {
        Map<String, String> env = env();
        env.put("UNIFYPORT_SIGNING_SECRETS", SECRET);
        // A route that takes 3 s to start, started first: the port is open all that time without the webhook's route.
        Files.writeString(work.resolve("routes/SlowStart.java"), """
                import org.apache.camel.Route;
                import org.apache.camel.builder.RouteBuilder;
                import org.apache.camel.support.RoutePolicySupport;

                public class SlowStart extends RouteBuilder {
                    @Override
                    public void configure() {
                        from("timer:slow-start?repeatCount=1").routeId("slow-start").startupOrder(1)
                                .routePolicy(new RoutePolicySupport() {
                                    @Override
                                    public void onStart(Route route) {
                                        try {
                                            Thread.sleep(3000);
                                        } catch (InterruptedException e) {
                                            Thread.currentThread().interrupt();
                                        }
                                    }
                                })
                                .log("slow start done");
                    }
                }
                """);
        DataSource db = RunnerProcess.embeddedDatabase(env);
        try (RunnerProcess runner = RunnerProcess.start(work, env)) {
            SignedDeliverySender sender = new SignedDeliverySender(
                    URI.create("http://127.0.0.1:" + runner.httpPort() + "/webhooks/unifyport"), Secret.of(SECRET));
            // As the provider does from the moment the port opens: every id again until it gets a 200.
            Map<String, Integer> lastAnswer = new LinkedHashMap<>();
            List<Integer> answers = new ArrayList<>();
            int id = 0;
            long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
            while (!runner.output().contains("chat-intake ready") && runner.isAlive() && System.nanoTime() < deadline) {
                String eventId = "evt_starting_" + id;
                Response response = sender.post(sender.sign(eventId,
                        ("{\"id\":\"" + eventId + "\"}").getBytes(StandardCharsets.UTF_8), TimestampForm.RFC3339));
                lastAnswer.put(eventId, response.status());
                answers.add(response.status());
                if (response.status() == 0) {
                    Thread.sleep(20); // the port is not open yet: the same event again shortly
                } else {
                    id++;
                }
            }
            runner.awaitReady();
            assertThat(answers).as("answers while starting (0: port not open yet)").contains(503).doesNotContain(404)
                    .allMatch(status -> status == 0 || status == 503 || status == 200);
            for (Map.Entry<String, Integer> event : lastAnswer.entrySet()) {
                if (event.getValue() != 200) {
                    String eventId = event.getKey();
                    assertThat(sender.post(sender.sign(eventId, ("{\"id\":\"" + eventId + "\"}").getBytes(StandardCharsets.UTF_8),
                            TimestampForm.RFC3339)).status()).as("retry of " + eventId).isEqualTo(200);
                }
            }
            assertThat(Sql.count(db, "SELECT count(DISTINCT event_id) FROM webhook_event WHERE event_id LIKE 'evt_starting_%'"))
                    .as("every delivery stored once").isEqualTo(lastAnswer.size());
            assertThat(runner.get("/no-such-path").statusCode()).as("an unknown path once running").isEqualTo(404);
        }
    }

    @Test
    void withoutASecretTheRunnerStartsAndTheRouteRefusesWithOneClearLine() throws Exception {
        try (RunnerProcess runner = RunnerProcess.start(work, env()).awaitReady()) {
            SignedDeliverySender sender = new SignedDeliverySender(
                    URI.create("http://127.0.0.1:" + runner.httpPort() + "/webhooks/unifyport"), Secret.of("anything"));
            Response response = sender.post(sender.sign("evt_x", "{}".getBytes(StandardCharsets.UTF_8), TimestampForm.RFC3339));
            assertThat(response.status()).isEqualTo(503);
            assertThat(response.body()).isEqualTo("{\"error\":\"not_configured\"}");
            assertThat(runner.get("/observe/health/ready").statusCode()).isEqualTo(200);
            String output = runner.output();
            assertThat(Pattern.compile("unifyport webhook: OFF").matcher(output).results().count()).isEqualTo(1);
            assertThat(output).contains("set UNIFYPORT_SIGNING_SECRETS");
        }
    }

    @Test
    void allowUnsignedIsLoggedAsInsecureAndAcceptsUnsignedDeliveries() throws Exception {
        Map<String, String> env = env();
        env.put("UNIFYPORT_ALLOW_UNSIGNED", "true");
        try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
            SignedDeliverySender sender = new SignedDeliverySender(
                    URI.create("http://127.0.0.1:" + runner.httpPort() + "/webhooks/unifyport"), Secret.of("unused"));
            Delivery unsigned = sender.sign("evt_u", "{\"id\":\"evt_u\",\"type\":\"message.read\"}".getBytes(StandardCharsets.UTF_8),
                    TimestampForm.RFC3339).withSignature(null).withTimestamp(null);
            assertThat(sender.post(unsigned).status()).isEqualTo(200);
            assertThat(runner.output()).contains("unifyport webhook: INSECURE");
        }
    }

    @Test
    void editingAnotherRouteFileNeverMakesTheWebhookAnswer404() throws Exception {
        Map<String, String> env = env();
        env.put("UNIFYPORT_SIGNING_SECRETS", SECRET);
        Path other = work.resolve("routes/other.yaml");
        Files.writeString(other, otherRoute("one"));
        try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
            SignedDeliverySender sender = new SignedDeliverySender(
                    URI.create("http://127.0.0.1:" + runner.httpPort() + "/webhooks/unifyport"), Secret.of(SECRET));
            List<Integer> statuses = new ArrayList<>();
            long deadline = System.nanoTime() + Duration.ofSeconds(4).toNanos();
            int i = 0;
            while (System.nanoTime() < deadline) {
                if (i == 20) {
                    Files.writeString(other, otherRoute("two"));
                }
                String id = "evt_reload_" + i++;
                statuses.add(sender.post(sender.sign(id, ("{\"id\":\"" + id + "\"}").getBytes(StandardCharsets.UTF_8),
                        TimestampForm.RFC3339)).status());
            }
            long reloaded = System.nanoTime() + Duration.ofSeconds(15).toNanos();
            while (!runner.get("/other").body().equals("two") && System.nanoTime() < reloaded) {
                Thread.sleep(100);
            }
            assertThat(runner.get("/other").body()).as("the other file was reloaded meanwhile").isEqualTo("two");
            // UnifyPort dead-letters a 404: one during a reload would be a lost event.
            assertThat(statuses).as("answers while another route file was reloaded").isNotEmpty().containsOnly(200);
        }
    }

    private static String otherRoute(String body) {
        return """
                - route:
                    id: other-route
                    from:
                      uri: "platform-http:/other"
                      steps:
                        - setBody:
                            constant: "%s"
                """.formatted(body);
    }

    /** A runner with its own ports and data, and the shipped route files. */
    private Map<String, String> env() throws IOException {
        Map<String, String> env = new HashMap<>(RunnerProcess.baseEnv(work));
        Path routes = Files.createDirectories(work.resolve("routes"));
        for (String file : List.of("unifyport-webhook.yaml", "unifyport-handlers.yaml")) {
            Files.copy(Path.of("routes", file), routes.resolve(file));
        }
        return env;
    }
}
