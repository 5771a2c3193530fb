package io.chatintake.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Secret;
import io.chatintake.sim.BotApiSimulator;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two runners under Telegram and webhook load while PostgreSQL restarts twice, down about 6 s
 * each: once stopped (fast shutdown), once crashed (immediate shutdown). Neither runner exits,
 * nothing is parked, no live runner's claims are released or taken over (an outage is not a
 * death), and every update and every acknowledged delivery is handled once.
 */
class DatabaseRestartUnderLoadIT {
    private static final String SECRET = "db_restart_it_secret_42";
    private static final Duration OUTAGE = Duration.ofSeconds(6);
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final int CHATS = 20;

    @TempDir
    Path work;

    @Test
    void restartsUnderLoadParkNothingEndNoRunnerAndReleaseNoLiveClaims() throws Exception {
        int port = RunnerProcess.freePort();
        Path pg = work.resolve("pg");
        EmbeddedDatabase database = EmbeddedDatabase.start(pg, port, true);
        try (BotApiSimulator simulator = BotApiSimulator.start()) {
            String token = simulator.addBot(707, "FAKE-restart-test-token", "restart_bot");
            RunnerProcess first = RunnerProcess.start(work.resolve("a"), env(work.resolve("a"), simulator, token, database));
            RunnerProcess second = RunnerProcess.start(work.resolve("b"), env(work.resolve("b"), simulator, token, database));
            try (first; second) {
                first.awaitReady();
                second.awaitReady();
                DataSource db = Sql.dataSource(database.jdbcUrl(), database.user());
                AtomicBoolean loading = new AtomicBoolean(true);
                Set<String> acknowledged = ConcurrentHashMap.newKeySet();
                int[] texts = {0};
                Thread telegram = new Thread(() -> {
                    while (loading.get()) {
                        simulator.enqueueText(token, 1 + texts[0] % CHATS, "text " + texts[0]++);
                        pause(25);
                    }
                }, "telegram-load");
                Thread webhooks = new Thread(() -> deliver(List.of(first, second), loading, acknowledged), "webhook-load");
                telegram.start();
                webhooks.start();

                pause(6000);
                database.close();
                pause(OUTAGE.toMillis());
                database = EmbeddedDatabase.start(pg, port, true);
                pause(10_000);
                long postmaster = database.serverProcess().orElseThrow().pid();
                new ProcessBuilder("kill", "-QUIT", Long.toString(postmaster)).inheritIO().start().waitFor();
                Await.until("PostgreSQL crashed", WAIT, () -> ProcessHandle.of(postmaster).map(p -> !p.isAlive()).orElse(true));
                database.close(); // the server is gone; this releases the data directory's lock
                pause(OUTAGE.toMillis());
                database = EmbeddedDatabase.start(pg, port, true);
                pause(8000);
                loading.set(false);
                telegram.join();
                webhooks.join();

                int sent = texts[0];
                try {
                    Await.until("every item done", WAIT, () -> Sql.count(db,
                            "SELECT count(*) FROM work_item WHERE state NOT IN ('done', 'parked')") == 0);
                    Await.until("every text answered", WAIT, () -> simulator.sentMessages(token).size() >= sent);
                } catch (AssertionError e) {
                    throw new AssertionError(sent + " texts, " + simulator.sentMessages(token).size() + " answers, "
                            + Sql.count(db, "SELECT count(*) FROM telegram_update") + " updates stored; items by state: "
                            + Sql.rows(db, "SELECT kind, state, count(*), max(last_error) FROM work_item GROUP BY 1, 2")
                            + "; effects: " + Sql.rows(db, "SELECT state, count(*) FROM outbound_effect GROUP BY 1")
                            + "; running: " + Sql.rows(db, "SELECT id, chat_key, claimed_by, claim_token, claim_expires_at - now(), updated_at,"
                            + " attempts FROM work_item WHERE state = 'running'")
                            + "; lanes: " + Sql.rows(db, "SELECT chat_key, claimed_by, claim_token, due_at - now() FROM work_lane"
                            + " WHERE claimed_by IS NOT NULL")
                            + "; beats: " + Sql.rows(db, "SELECT process_id, now() - beat_at FROM runner_heartbeat") + "\n"
                            + first.output() + "\n----\n" + second.output(), e);
                }
                assertThat(first.isAlive() && second.isAlive()).as("no runner exits:\n%s\n%s", first.output(), second.output()).isTrue();
                assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'parked'")).as("none parked").isZero();
                assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE last_error LIKE 'claim released:%'"))
                        .as("no live runner's claim released as dead").isZero();
                for (RunnerProcess runner : List.of(first, second)) {
                    assertThat(runner.output()).doesNotContain("work: released").doesNotContain("was released or taken over");
                }
                assertThat(simulator.sentMessages(token).stream().map(m -> m.path("text").asText()).toList())
                        .as("every text answered once").doesNotHaveDuplicates().hasSize(sent);
                assertThat(Sql.count(db, "SELECT count(*) FROM telegram_update")).isEqualTo(sent);
                assertThat(Sql.count(db, "SELECT count(DISTINCT event_id) FROM webhook_event WHERE event_id LIKE 'evt_restart_%'"))
                        .as("every acknowledged delivery stored").isGreaterThanOrEqualTo(acknowledged.size());
                assertThat(Sql.count(db, "SELECT count(*) - count(DISTINCT event_id) FROM webhook_event")).as("none twice").isZero();
                assertThat(acknowledged).as("deliveries went in").hasSizeGreaterThan(100);
                System.out.printf("restart under load: %d texts, %d deliveries acknowledged%n", sent, acknowledged.size());
            }
        } finally {
            database.close();
        }
    }

    private static Map<String, String> env(Path dir, BotApiSimulator simulator, String token, EmbeddedDatabase database) {
        Map<String, String> env = RunnerProcess.pollingEnv(dir, simulator.url(), token);
        env.put("CHAT_INTAKE_DB_URL", database.jdbcUrl());
        env.put("CHAT_INTAKE_DB_USER", database.user());
        env.put("UNIFYPORT_SIGNING_SECRETS", SECRET);
        env.put("TELEGRAM_ECHO_REPLIES", "true");
        env.put("TELEGRAM_SEND_PER_BOT_PER_SECOND", "300");
        env.put("TELEGRAM_SEND_PER_CHAT_PER_SECOND", "100");
        // A claim whose commit went through while its answer was lost in the crash is not known to
        // its live claimer: it waits out its claim (LaneClaims). Shorter than the shipped 120 s so the
        // test waits less, still far longer than an outage, so no live claim runs out meanwhile.
        env.put("WORK_CLAIM_SECONDS", "45");
        return env;
    }

    /** A provider: each event sent until answered 200, to the runners in turn; 503 means retry. */
    private static void deliver(List<RunnerProcess> runners, AtomicBoolean loading, Set<String> acknowledged) {
        List<SignedDeliverySender> senders = runners.stream().map(r -> new SignedDeliverySender(
                URI.create("http://127.0.0.1:" + r.httpPort() + "/webhooks/unifyport"), Secret.of(SECRET))).toList();
        for (int n = 0; loading.get(); n++) {
            String eventId = "evt_restart_" + n;
            byte[] body = SignedDeliverySender.envelope(eventId, "message.received", "whatsapp", "acc_1", Instant.now(),
                    "{\"conversation\":{\"id\":\"c" + n % CHATS + "\",\"type\":\"user\"},\"sender\":{\"id\":\"u1\",\"type\":\"user\"},"
                            + "\"message\":{\"id\":\"m" + n + "\",\"type\":\"text\",\"text\":\"t\",\"direction\":\"in\"}}");
            for (int attempt = 0; loading.get(); attempt++) {
                SignedDeliverySender sender = senders.get((n + attempt) % senders.size());
                try {
                    if (sender.post(sender.sign(eventId, body, TimestampForm.RFC3339)).status() == 200) {
                        acknowledged.add(eventId);
                        break;
                    }
                } catch (RuntimeException e) {
                    // no answer: the provider retries
                }
                pause(200);
            }
            pause(20);
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
