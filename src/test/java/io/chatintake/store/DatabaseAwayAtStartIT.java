package io.chatintake.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Secret;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real jar started while its PostgreSQL is down, which comes up 20 s later: the runner waits
 * (live, not ready, webhooks 503 with Retry-After), says so once, and once more when it is back;
 * then it migrates, becomes ready, stores signed deliveries and decides an album. A database that
 * answers but is wrong (a missing database) is still one line and exit 2.
 */
class DatabaseAwayAtStartIT {
    private static final String SECRET = "db_away_it_secret_77";
    private static final Duration DOWN_FOR = Duration.ofSeconds(20);

    private static final String PASSWORD = "away-at-start-test-password";

    @TempDir
    Path work;

    @Test
    void aRunnerStartedWithoutItsDatabaseWaitsForItThenStoresAndDecidesAlbums() throws Exception {
        int port = RunnerProcess.freePort();
        String url = "jdbc:postgresql://127.0.0.1:" + port + "/chat_intake";
        Map<String, String> env = RunnerProcess.baseEnv(work.resolve("runner"));
        env.put("CHAT_INTAKE_ROUTES_DIR", Path.of("routes").toAbsolutePath().toString());
        env.put("CHAT_INTAKE_DB_URL", url);
        env.put("CHAT_INTAKE_DB_USER", "postgres");
        // The database does not exist yet: its password is chosen now, in the file it will start with.
        Files.createDirectories(work);
        Files.writeString(work.resolve("pg.password"), PASSWORD);
        env.put("CHAT_INTAKE_DB_PASSWORD", PASSWORD);
        env.put("UNIFYPORT_SIGNING_SECRETS", SECRET);
        env.put("ALBUMS_QUIET_PERIOD_SECONDS", "3");
        EmbeddedDatabase database = null;
        long started = System.nanoTime();
        try (RunnerProcess runner = RunnerProcess.start(work.resolve("runner"), env)) {
            runner.awaitOutput("database: not reachable", Duration.ofSeconds(60));
            SignedDeliverySender sender = new SignedDeliverySender(
                    URI.create("http://127.0.0.1:" + runner.httpPort() + "/webhooks/unifyport"), Secret.of(SECRET));
            Await.until("the HTTP server answers while the database is away", Duration.ofSeconds(30),
                    () -> status(runner, "/observe/health/live") == 200);
            assertThat(status(runner, "/observe/health/ready")).as("readiness while the database is away").isEqualTo(503);
            byte[] early = SignedDeliverySender.envelope("evt_away_early", "message.received", "whatsapp", "acc_1", Instant.now(),
                    data("c-early", "{\"id\":\"m-early\",\"type\":\"text\",\"text\":\"hi\",\"direction\":\"in\"}"));
            SignedDeliverySender.Response refused = sender.post(sender.sign("evt_away_early", early, TimestampForm.RFC3339));
            assertThat(refused.status()).as("a delivery while the database is away: %s", refused).isEqualTo(503);

            Await.throughout("the runner waiting for the database", Duration.ofNanos(Math.max(0, started + DOWN_FOR.toNanos() - System.nanoTime())),
                    runner::isAlive);
            assertThat(runner.isAlive()).as("the runner waits, it does not exit:\n%s", runner.output()).isTrue();
            assertThat(status(runner, "/observe/health/ready")).as("readiness just before the database comes").isEqualTo(503);
            database = EmbeddedDatabase.start(work.resolve("pg"), port, false);

            runner.awaitOutput("chat-intake ready", Duration.ofSeconds(60));
            assertThat(status(runner, "/observe/health/ready")).as("readiness once the database is back").isEqualTo(200);
            String log = runner.output();
            assertThat(log.split("database: not reachable", -1)).as("the wait said once").hasSize(2);
            assertThat(log.split("database: reachable after", -1)).as("the return said once").hasSize(2);
            assertThat(log.indexOf("migrations: schema at version")).as("migrated once back, before the routes start")
                    .isGreaterThan(log.indexOf("database: not reachable")).isLessThan(log.indexOf("chat-intake ready"));

            assertThat(sender.post(sender.sign("evt_away_early", early, TimestampForm.RFC3339)).status())
                    .as("the provider's retry of the refused delivery").isEqualTo(200);
            for (int index = 1; index <= 2; index++) {
                String eventId = "evt_away_child_" + index;
                byte[] body = SignedDeliverySender.envelope(eventId, "message.received", "whatsapp", "acc_1", Instant.now(),
                        data("c-album", "{\"id\":\"a" + index + "\",\"type\":\"image\",\"direction\":\"in\","
                                + "\"album\":{\"id\":\"alb\",\"index\":" + index + ",\"total\":2}}"));
                assertThat(sender.post(sender.sign(eventId, body, TimestampForm.RFC3339)).status()).isEqualTo(200);
            }
            DataSource db = Sql.dataSource(database);
            String albumKey = "[\"default\", \"whatsapp\", \"acc_1\", \"c-album\", \"alb\"]";
            Await.until("the album decided", Duration.ofSeconds(60), () -> Sql.string(db,
                    "SELECT kind || ' ' || jsonb_array_length(child_ids) FROM album_decision WHERE album_key = '" + albumKey + "'") != null);
            assertThat(Sql.string(db, "SELECT kind || ' ' || jsonb_array_length(child_ids) FROM album_decision WHERE album_key = '"
                    + albumKey + "'")).isEqualTo("complete 2");
            assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event WHERE event_id = 'evt_away_early'")).isEqualTo(1);
            assertThat(runner.isAlive()).isTrue();

            // Answering, but wrong: not waited for.
            Map<String, String> wrong = RunnerProcess.baseEnv(work.resolve("wrong"));
            wrong.put("CHAT_INTAKE_DB_URL", "jdbc:postgresql://127.0.0.1:" + port + "/no_such_database");
            wrong.put("CHAT_INTAKE_DB_USER", "postgres");
            wrong.put("CHAT_INTAKE_DB_PASSWORD", PASSWORD);
            try (RunnerProcess misconfigured = RunnerProcess.start(work.resolve("wrong"), wrong)) {
                assertThat(misconfigured.awaitExit(Duration.ofSeconds(60))).as(misconfigured.output()).isEqualTo(2);
                assertThat(misconfigured.output()).contains("chat-intake: CHAT_INTAKE_DB_URL: cannot connect to")
                        .contains("no_such_database").doesNotContain("waiting for it");
            }
        } finally {
            if (database != null) {
                database.close();
            }
        }
    }

    private static String data(String conversation, String message) {
        return "{\"conversation\":{\"id\":\"" + conversation + "\",\"type\":\"user\"},\"sender\":{\"id\":\"u1\",\"type\":\"user\"},"
                + "\"message\":" + message + "}";
    }

    private static int status(RunnerProcess runner, String path) {
        HttpResponse<String> response = runner.get(path);
        return response.statusCode();
    }
}
