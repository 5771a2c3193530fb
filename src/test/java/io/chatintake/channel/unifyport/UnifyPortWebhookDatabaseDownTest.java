package io.chatintake.channel.unifyport;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.chatintake.config.Secret;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.Response;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import io.chatintake.store.EmbeddedDatabase;
import io.chatintake.store.Migrations;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.testkit.WebhookServer;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The database goes away under a running route: the delivery is answered 503 (so UnifyPort
 * retries) within a bound, nothing is half-stored, and the retry after the database is back is
 * stored once.
 */
class UnifyPortWebhookDatabaseDownTest {
    /** Pool wait (2 s) + statement bound (2 s) + HTTP and scheduling slack. */
    private static final Duration ANSWER_BOUND = Duration.ofSeconds(6);

    @TempDir
    Path dir;

    @Test
    void whileTheDatabaseIsDownDeliveriesAre503AndTheRetryIsStoredOnce() throws Exception {
        int port = RunnerProcess.freePort();
        EmbeddedDatabase database = EmbeddedDatabase.start(dir.resolve("pg"), port, false);
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(database.jdbcUrl());
        config.setUsername(database.user());
        config.setPassword(database.password().reveal());
        config.setMaximumPoolSize(4);
        config.setConnectionTimeout(2000);
        try (HikariDataSource pool = new HikariDataSource(config);
             WebhookServer server = WebhookServer.start(pool, Map.of(
                     "unifyport.signing-secrets", "secret_1", "unifyport.statement-timeout-millis", "2000"))) {
            Migrations.apply(pool);
            SignedDeliverySender sender = new SignedDeliverySender(server.uri("/webhooks/unifyport"), Secret.of("secret_1"));
            byte[] body = UnifyPortWebhookTest.message("evt_outage", "m1", "during the outage");
            assertThat(sender.post(sender.sign("evt_before", UnifyPortWebhookTest.message("evt_before", "m0", "x"),
                    TimestampForm.RFC3339)).status()).isEqualTo(200);

            database.close();
            Duration slowest = slowest503(sender, "evt_outage", body);
            assertThat(slowest).as("answered within the bound").isLessThan(ANSWER_BOUND);
            System.out.println("database down: slowest 503 answered in " + slowest.toMillis() + " ms");

            database = EmbeddedDatabase.start(dir.resolve("pg"), port, false);
            List<Response> retry = sender.deliver("evt_outage", body, TimestampForm.RFC3339, 5, Duration.ofMillis(500));
            assertThat(retry.get(retry.size() - 1).status()).as(retry.toString()).isEqualTo(200);
            assertThat(UnifyPortWebhookTest.eventIds(pool)).containsExactlyInAnyOrder("evt_before", "evt_outage");
            assertThat(UnifyPortWebhookTest.count(pool, "SELECT delivery_count FROM webhook_event WHERE event_id = 'evt_outage'"))
                    .as("the 503 delivery left nothing behind").isEqualTo(1);
            Await.workScheduled(pool);
            assertThat(UnifyPortWebhookTest.count(pool, "SELECT count(*) FROM channel_message")).isEqualTo(2);
        } finally {
            database.close();
        }
    }

    /**
     * Delivers the event again and again while the database is down, each answered 503
     * storage_unavailable, three times at least and until past Hikari's 500 ms bypass window: the
     * first attempts meet pooled connections the shutdown broke; later ones validate, find none, and
     * wait for a new one that cannot come.
     * @return the slowest answer
     */
    static Duration slowest503(SignedDeliverySender sender, String eventId, byte[] body) throws InterruptedException {
        Duration slowest = Duration.ZERO;
        long pastBypassWindow = System.nanoTime() + Duration.ofMillis(1200).toNanos();
        for (int attempt = 0; attempt < 3 || System.nanoTime() < pastBypassWindow; attempt++) {
            long started = System.nanoTime();
            Response during = sender.post(sender.sign(eventId, body, TimestampForm.UNIX_SECONDS));
            Duration took = Duration.ofNanos(System.nanoTime() - started);
            slowest = took.compareTo(slowest) > 0 ? took : slowest;
            assertThat(during.status()).as(during.body()).isEqualTo(503);
            assertThat(during.body()).isEqualTo("{\"error\":\"storage_unavailable\"}");
            Thread.sleep(100);
        }
        return slowest;
    }

    @Test
    void aFullPoolIsAnswered503WithinThePoolWait() throws Exception {
        HikariDataSource shared = (HikariDataSource) TestDatabase.dataSource();
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(shared.getJdbcUrl());
        config.setUsername(shared.getUsername());
        config.setPassword(shared.getPassword());
        config.setMaximumPoolSize(1);
        config.setConnectionTimeout(1000);
        try (HikariDataSource pool = new HikariDataSource(config);
             WebhookServer server = WebhookServer.start(pool, Map.of("unifyport.signing-secrets", "secret_1"));
             Connection held = pool.getConnection()) {
            SignedDeliverySender sender = new SignedDeliverySender(server.uri("/webhooks/unifyport"), Secret.of("secret_1"));
            long started = System.nanoTime();
            Response response = sender.post(sender.sign("evt_pool", UnifyPortWebhookTest.message("evt_pool", "m1", "x"),
                    TimestampForm.RFC3339));
            Duration took = Duration.ofNanos(System.nanoTime() - started);
            assertThat(response.status()).isEqualTo(503);
            assertThat(response.body()).isEqualTo("{\"error\":\"storage_unavailable\"}");
            assertThat(took).isLessThan(Duration.ofSeconds(3));
            assertThat(held.isValid(1)).isTrue();
        }
    }
}
