package io.chatintake.channel.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Secret;
import io.chatintake.ops.WorkCommands;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.testkit.WebhookServer;
import io.chatintake.work.Retention;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** {@code routes/whatsapp.yaml} as shipped: Meta's signature, subscription check, messages and statuses. */
@ExtendWith(TestDatabase.class)
class WhatsAppWebhookTest {
    /**
     * Meta publishes no signed example. X-Hub-Signature-256 is GitHub's scheme exactly, and GitHub
     * publishes one (docs.github.com, "Validating webhook deliveries"): this secret, this body.
     */
    private static final String GITHUB_SECRET = "It's a Secret to Everybody";
    private static final String GITHUB_BODY = "Hello, World!";
    private static final String GITHUB_SIGNATURE = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
    /** Meta's sample text-message notification, signed outside our code:
     *  {@code printf '%s' "$BODY" | openssl dgst -sha256 -hmac whatsapp_app_secret_1}. */
    private static final String SAMPLE = "{\"object\":\"whatsapp_business_account\",\"entry\":[{\"id\":\"102290129340398\",\"changes\":[{\"value\":"
            + "{\"messaging_product\":\"whatsapp\",\"metadata\":{\"display_phone_number\":\"15550783881\",\"phone_number_id\":\"106540352242922\"},"
            + "\"contacts\":[{\"profile\":{\"name\":\"Sheena Nelson\"},\"wa_id\":\"16505551234\"}],\"messages\":[{\"from\":\"16505551234\","
            + "\"id\":\"wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=\",\"timestamp\":\"1749416383\",\"type\":\"text\","
            + "\"text\":{\"body\":\"Does it come in another color?\"}}]},\"field\":\"messages\"}]}]}";
    private static final String SAMPLE_SIGNATURE = "sha256=6d9a90543ffbdb184590bd049cbd731e4fe362c5d3ec106444b13e8391715a31";
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    private static WebhookServer server;
    private static SignedDeliverySender meta;

    @BeforeAll
    static void start() {
        server = WebhookServer.start(TestDatabase.dataSource(), Map.of("whatsapp.app-secrets", "whatsapp_app_secret_1," + GITHUB_SECRET,
                "whatsapp.verify-token", "meatyhamhock"), "file:routes/whatsapp.yaml");
        meta = new SignedDeliverySender(server.uri("/webhooks/whatsapp"), Secret.of("whatsapp_app_secret_1"), SignatureScheme.meta());
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    @Test
    void thePublishedSignaturesAreAccepted(DataSource db) {
        assertThat(meta.postRaw(bytes(GITHUB_BODY), "application/json", Map.of("X-Hub-Signature-256", GITHUB_SIGNATURE)).body())
                .as("an authentic body that is not JSON is kept raw").isEqualTo("{\"status\":\"stored\"}");
        assertThat(meta.postRaw(bytes(SAMPLE), "application/json", Map.of("X-Hub-Signature-256", SAMPLE_SIGNATURE)).body())
                .isEqualTo("{\"status\":\"stored\"}");
        assertThat(Sql.string(db, "SELECT string_agg(coalesce(event_type, parse_error), ', ' ORDER BY id) FROM webhook_event"))
                .isEqualTo("invalid_json, message");
        Await.workScheduled(db);
        assertThat(Sql.string(db, "SELECT provider || '/' || account_id || '/' || conversation_id || ' ' || text FROM channel_message"))
                .isEqualTo("whatsapp/106540352242922/16505551234 Does it come in another color?");
    }

    @Test
    void aTamperedBodyOrAWrongSecretIs401AndStoresNothing(DataSource db) {
        assertThat(meta.postRaw(bytes(SAMPLE.replace("color", "colour")), "application/json", Map.of("X-Hub-Signature-256", SAMPLE_SIGNATURE))
                .status()).isEqualTo(401);
        SignedDeliverySender wrong = new SignedDeliverySender(server.uri("/webhooks/whatsapp"), Secret.of("other"), SignatureScheme.meta());
        assertThat(wrong.postSigned(bytes(SAMPLE), "application/json").body()).isEqualTo("{\"error\":\"bad_signature\"}");
        assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event")).isZero();
    }

    @Test
    void everyMessageAndStatusOfADeliveryIsOneRowAndARedeliveryAddsNone(DataSource db) {
        String value = "{\"messaging_product\":\"whatsapp\",\"metadata\":{\"display_phone_number\":\"15550783881\",\"phone_number_id\":\"PN1\"},"
                + "\"messages\":[" + message("wamid.A", "one") + "," + message("wamid.B", "two") + "],"
                + "\"statuses\":[{\"id\":\"wamid.OUT\",\"status\":\"delivered\",\"timestamp\":\"1749416400\",\"recipient_id\":\"16505551234\"},"
                + "{\"id\":\"wamid.OUT\",\"status\":\"read\",\"timestamp\":\"1749416401\",\"recipient_id\":\"16505551234\"}]}";
        byte[] body = bytes("{\"object\":\"whatsapp_business_account\",\"entry\":[{\"id\":\"WABA\",\"changes\":[{\"value\":" + value
                + ",\"field\":\"messages\"}]}]}");
        assertThat(meta.postSigned(body, "application/json").body()).isEqualTo("{\"status\":\"stored\"}");
        assertThat(meta.postSigned(body, "application/json").body()).isEqualTo("{\"status\":\"duplicate\"}");
        assertThat(Sql.string(db, "SELECT string_agg(event_id || ' ' || event_type || ' ' || account_id || ' ' || delivery_count, ', ' ORDER BY id)"
                + " FROM webhook_event WHERE channel = 'whatsapp'"))
                .isEqualTo("wamid.A message PN1 2, wamid.B message PN1 2, wamid.OUT:delivered status.delivered PN1 2, wamid.OUT:read status.read PN1 2");
        Await.workScheduled(db);
        assertThat(Sql.count(db, "SELECT count(*) FROM channel_message")).as("statuses are not messages").isEqualTo(2);
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'whatsapp-event'")).isEqualTo(4);
    }

    @Test
    void theSubscriptionCheckAnswersTheChallengeOnlyForTheVerifyToken(DataSource db) throws Exception {
        HttpResponse<String> ok = get("?hub.mode=subscribe&hub.verify_token=meatyhamhock&hub.challenge=1158201444");
        assertThat(ok.statusCode()).isEqualTo(200);
        assertThat(ok.body()).isEqualTo("1158201444");
        assertThat(get("?hub.mode=subscribe&hub.verify_token=wrong&hub.challenge=1158201444").statusCode()).isEqualTo(403);
        assertThat(get("?hub.mode=unsubscribe&hub.verify_token=meatyhamhock&hub.challenge=1158201444").statusCode()).isEqualTo(403);
        assertThat(get("?hub.mode=subscribe&hub.challenge=1158201444").statusCode()).isEqualTo(403);
        assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event")).isZero();
    }

    @Test
    void aSignedBodyWithOnlyErrorsIsStoredWholeAsUnmappedAndCounted(DataSource db) {
        String errors = "{\"object\":\"whatsapp_business_account\",\"entry\":[{\"id\":\"102290129340398\",\"changes\":[{\"value\":"
                + "{\"messaging_product\":\"whatsapp\",\"metadata\":{\"phone_number_id\":\"106540352242922\"},"
                + "\"errors\":[{\"code\":131000,\"title\":\"Something went wrong\"}]},\"field\":\"messages\"}]}]}";

        SignedDeliverySender.Response response = meta.postSigned(bytes(errors), "application/json");

        assertThat(response.status()).isEqualTo(200);
        assertThat(response.body()).isEqualTo("{\"status\":\"unmapped\"}");
        assertThat(Sql.rows(db, "SELECT parse_error, coalesce(event_type, 'none'), convert_from(body, 'UTF8'), payload->'entry'->0->'changes'->0->'value'->'errors'->0->>'code'"
                + " FROM webhook_event")).containsExactly(List.of("unmapped", "unmapped", errors, "131000"));
        assertThat(meta.postSigned(bytes(errors), "application/json").body()).as("the same bytes again").isEqualTo("{\"status\":\"duplicate\"}");
        assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event")).isEqualTo(1);

        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        new WorkCommands(TestDatabase.commandSettings(), new PrintStream(printed, true, StandardCharsets.UTF_8))
                .run(List.of("status"));
        assertThat(printed.toString(StandardCharsets.UTF_8)).contains("  whatsapp/default: 1 unmapped, the latest ");
    }

    @Test
    void aDeliveryReplayedAfterRetentionPurgedItsRowIsADuplicateAndRunsNothing(DataSource db) throws Exception {
        byte[] body = bytes("{\"object\":\"whatsapp_business_account\",\"entry\":[{\"id\":\"1\",\"changes\":[{\"value\":"
                + "{\"metadata\":{\"phone_number_id\":\"PN9\"},\"messages\":[" + message("wamid.REPLAY", "once only") + "]}}]}]}");
        assertThat(meta.postSigned(body, "application/json").body()).isEqualTo("{\"status\":\"stored\"}");
        Await.workScheduled(db);
        // Only once the dispatcher is through with it: a run still recording its result would undo the edit below.
        Await.until("its work to finish", Duration.ofSeconds(20),
                () -> Sql.count(db, "SELECT count(*) FROM work_item WHERE state IN ('pending', 'running', 'failed')") == 0);
        // Its handler ran long ago and the event is past retention.
        Sql.execute(db, "UPDATE work_item SET state = 'done', done_at = now() - interval '40 days'");
        Sql.execute(db, "UPDATE webhook_event SET received_at = now() - interval '40 days'");
        Retention retention = new Retention(db,
                Map.of("retention.webhook-event-days", 30, "retention.dedupe-key-days", 400), 100);
        retention.purge();
        assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event")).isZero();
        assertThat(Sql.rows(db, "SELECT workspace, channel, event_id FROM webhook_event_purged"))
                .containsExactly(List.of("default", "whatsapp", "wamid.REPLAY"));

        SignedDeliverySender.Response replay = meta.postSigned(body, "application/json");

        assertThat(replay.status()).isEqualTo(200);
        assertThat(replay.body()).isEqualTo("{\"status\":\"duplicate\"}");
        assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event")).as("not stored again").isZero();
        assertThat(Sql.count(db, "SELECT count(*) FROM work_staged")).as("its handler not run again").isZero();
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE state <> 'done'")).isZero();
        assertThat(Sql.count(db, "SELECT count(*) FROM channel_message WHERE message_id = 'wamid.REPLAY'"))
                .as("the child row is the first delivery's").isEqualTo(1);

        // Past retention.dedupe-key-days the key goes too.
        Sql.execute(db, "UPDATE webhook_event_purged SET purged_at = now() - interval '401 days'");
        retention.purge();
        assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event_purged")).isZero();
    }

    private static String message(String id, String text) {
        return "{\"from\":\"16505551234\",\"id\":\"" + id + "\",\"timestamp\":\"" + Instant.now().getEpochSecond() + "\",\"type\":\"text\","
                + "\"text\":{\"body\":\"" + text + "\"}}";
    }

    private static HttpResponse<String> get(String query) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(server.uri("/webhooks/whatsapp" + query)).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
