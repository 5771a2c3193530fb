package io.chatintake.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Secret;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The jar running: a webhook route file saved ten times while a provider delivers every 20 ms.
 * No delivery is answered 404 (which providers dead-letter) while the route is swapped, and every
 * delivery is stored once after the provider's retries.
 */
class WebhookRouteReloadIT {
    private static final String SECRET = "route_reload_it_secret_42";
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final int SAVES = 10;

    @TempDir
    Path work;

    @Test
    void savingAWebhookRouteFileUnderDeliveriesAnswersNo404AndLosesNothing() throws Exception {
        Map<String, String> env = RunnerProcess.baseEnv(work);
        env.put("UNIFYPORT_SIGNING_SECRETS", SECRET);
        Path route = Files.createDirectories(work.resolve("routes")).resolve("unifyport-webhook.yaml");
        String shipped = Files.readString(Path.of("routes/unifyport-webhook.yaml"));
        Files.writeString(route, shipped);
        // Stored events are handled as shipped, so none waits failing for a handler.
        for (String handlers : new String[] {"handlers.yaml", "unifyport-handlers.yaml"}) {
            Files.copy(Path.of("routes", handlers), route.resolveSibling(handlers));
        }
        try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
            DataSource db = RunnerProcess.embeddedDatabase(env);
            SignedDeliverySender sender = new SignedDeliverySender(
                    URI.create("http://127.0.0.1:" + runner.httpPort() + "/webhooks/unifyport"), Secret.of(SECRET));
            Map<Integer, AtomicInteger> answers = new ConcurrentHashMap<>();
            AtomicBoolean delivering = new AtomicBoolean(true);
            AtomicInteger sent = new AtomicInteger();
            Thread provider = new Thread(() -> {
                for (int n = 0; delivering.get(); n++) {
                    deliverUntilAccepted(sender, n, answers);
                    sent.incrementAndGet();
                    pause(20);
                }
            }, "provider");
            provider.start();
            for (int save = 1; save <= SAVES; save++) {
                Files.writeString(route, shipped + "# save " + save + "\n");
                int reloads = save;
                // The route's endpoint says it is on each time the file's new version is loaded.
                Await.until("reload " + save, WAIT, () -> runner.output().lines()
                        .filter(line -> line.contains("unifyport webhook: on for workspace")).count() > reloads);
                Await.until("deliveries after reload " + save, WAIT, () -> answers.getOrDefault(200, new AtomicInteger()).get() >= 5 * reloads);
            }
            delivering.set(false);
            provider.join();

            assertThat(answers).as("answers by status").doesNotContainKey(404);
            assertThat(answers.get(200).get()).isEqualTo(sent.get());
            assertThat(Sql.count(db, "SELECT count(DISTINCT event_id) FROM webhook_event WHERE event_id LIKE 'evt_reload_%'"))
                    .as("every delivery stored").isEqualTo(sent.get());
            assertThat(Sql.count(db, "SELECT count(*) - count(DISTINCT event_id) FROM webhook_event")).as("none twice").isZero();
            System.out.printf("route reload: %d deliveries over %d saves; answers by status %s%n", sent.get(), SAVES, answers);
        }
    }

    /** As a provider does: the same event again after a 5xx or no answer, until it is accepted. */
    private static void deliverUntilAccepted(SignedDeliverySender sender, int n, Map<Integer, AtomicInteger> answers) {
        String eventId = "evt_reload_" + n;
        byte[] body = SignedDeliverySender.envelope(eventId, "message.received", "whatsapp", "acc_1", Instant.now(),
                "{\"conversation\":{\"id\":\"c" + n % 5 + "\",\"type\":\"user\"},\"sender\":{\"id\":\"u1\",\"type\":\"user\"},"
                        + "\"message\":{\"id\":\"m" + n + "\",\"type\":\"text\",\"text\":\"t\",\"direction\":\"in\"}}");
        while (true) {
            int status;
            try {
                status = sender.post(sender.sign(eventId, body, TimestampForm.RFC3339)).status();
            } catch (RuntimeException e) {
                status = -1;
            }
            answers.computeIfAbsent(status, s -> new AtomicInteger()).incrementAndGet();
            if (status == 200 || status == 404) {
                return; // a provider dead-letters a 404: the event is not sent again
            }
            pause(100);
        }
    }

    private static void pause(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
