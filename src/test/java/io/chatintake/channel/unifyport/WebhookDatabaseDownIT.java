package io.chatintake.channel.unifyport;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Secret;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.Response;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import io.chatintake.store.EmbeddedDatabase;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real jar with its shipped settings: the database stops under a running runner, and a signed
 * delivery is answered 503 within 3 s (Slack gives up after 3 s), not after the pool's start-up
 * wait; once the database is back, the provider's retry is stored once.
 */
class WebhookDatabaseDownIT {
    private static final String SECRET = "whk_down_it_secret_51c2";
    private static final Duration SLACKS_PATIENCE = Duration.ofSeconds(3);

    @TempDir
    Path work;

    @Test
    void aDeliveryWhileTheDatabaseIsDownIsAnswered503WithinThreeSecondsAndItsRetryIsStoredOnce() throws Exception {
        int port = RunnerProcess.freePort();
        Path pg = work.resolve("pg");
        EmbeddedDatabase database = EmbeddedDatabase.start(pg, port, false);
        Map<String, String> env = RunnerProcess.baseEnv(work);
        env.put("CHAT_INTAKE_ROUTES_DIR", Path.of("routes").toAbsolutePath().toString());
        env.put("CHAT_INTAKE_DB_URL", database.jdbcUrl());
        env.put("CHAT_INTAKE_DB_USER", database.user());
        env.put("CHAT_INTAKE_DB_PASSWORD", database.password().reveal());
        env.put("UNIFYPORT_SIGNING_SECRETS", SECRET);
        DataSource db = Sql.dataSource(database);
        try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
            SignedDeliverySender sender = new SignedDeliverySender(
                    URI.create("http://127.0.0.1:" + runner.httpPort() + "/webhooks/unifyport"), Secret.of(SECRET));
            assertThat(sender.post(sender.sign("evt_before", UnifyPortWebhookTest.message("evt_before", "m0", "x"),
                    TimestampForm.RFC3339)).status()).isEqualTo(200);

            database.close();
            byte[] body = UnifyPortWebhookTest.message("evt_outage", "m1", "during the outage");
            Duration slowest = UnifyPortWebhookDatabaseDownTest.slowest503(sender, "evt_outage", body);
            assertThat(slowest).as("the slowest 503").isLessThan(SLACKS_PATIENCE);

            database = EmbeddedDatabase.start(pg, port, false);
            List<Response> retry = sender.deliver("evt_outage", body, TimestampForm.RFC3339, 20, Duration.ofMillis(500));
            assertThat(retry.get(retry.size() - 1).status()).as(retry.toString()).isEqualTo(200);
            assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event WHERE event_id = 'evt_outage'")).isEqualTo(1);
            assertThat(Sql.count(db, "SELECT delivery_count FROM webhook_event WHERE event_id = 'evt_outage'"))
                    .as("the 503 deliveries left nothing behind").isEqualTo(1);
        } finally {
            database.close();
        }
    }
}
