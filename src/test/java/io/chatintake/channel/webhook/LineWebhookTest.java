package io.chatintake.channel.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Secret;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.Response;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.LogCapture;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.testkit.WebhookServer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** {@code routes/line.yaml} as shipped, with the album routes and a real work dispatcher. */
@ExtendWith(TestDatabase.class)
class LineWebhookTest {
    /** LINE's own SDK test vector (line-bot-sdk-nodejs, test/validate-signature.spec.ts): secret "test_secret". */
    private static final String SDK_BODY = "{\"hello\":\"world\"}";
    private static final String SDK_SIGNATURE = "t7Hn4ZDHqs6e+wdvI5TyQIvzie0DmMUmuXEBqyyE/tM=";
    private static WebhookServer server;
    private static SignedDeliverySender line;
    private static LogCapture logs;

    @BeforeAll
    static void start() {
        logs = new LogCapture();
        server = WebhookServer.startWithWork(TestDatabase.dataSource(), Map.of("line.channel-secrets", "test_secret, line_secret_new",
                "albums.quiet-period-seconds", "3", "telegram.echo-replies", "false"),
                "file:routes/line.yaml,file:routes/albums.yaml,file:routes/handlers.yaml");
        line = new SignedDeliverySender(server.uri("/webhooks/line"), Secret.of("line_secret_new"), SignatureScheme.line());
    }

    @AfterAll
    static void stop() {
        server.close();
        logs.close();
        assertThat(logs.lines()).as("logs were captured").anyMatch(l -> l.contains("line webhook: on"));
        for (String secret : List.of("test_secret", "line_secret_new", "rt_secret", "\"text\":")) {
            assertThat(logs.lines()).as("no log line holds a secret, reply token or body").noneMatch(l -> l.contains(secret));
        }
    }

    @Test
    void linesPublishedSignatureIsAcceptedAndItsBodyWithoutEventsIsStoredAsUnmapped(DataSource db) {
        Response response = line.postRaw(bytes(SDK_BODY), "application/json", Map.of("X-Line-Signature", SDK_SIGNATURE));
        assertThat(response.status()).isEqualTo(200);
        assertThat(response.body()).as("authentic: kept, though no event is where LINE puts them").isEqualTo("{\"status\":\"unmapped\"}");
        Response tampered = line.postRaw(bytes("{\"hello\":\"World\"}"), "application/json", Map.of("X-Line-Signature", SDK_SIGNATURE));
        assertThat(tampered.status()).isEqualTo(401);
        assertThat(tampered.body()).isEqualTo("{\"error\":\"bad_signature\"}");
        assertThat(Sql.string(db, "SELECT string_agg(parse_error || ' ' || convert_from(body, 'UTF8'), ', ') FROM webhook_event"))
                .isEqualTo("unmapped " + SDK_BODY);
    }

    @Test
    void theVerifyButtonsEmptyEventsAreAnswered200AndNotStored(DataSource db) {
        Response response = line.postSigned(bytes("{\"destination\":\"Uxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\",\"events\":[]}"), "application/json");
        assertThat(response.status()).isEqualTo(200);
        assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event")).isZero();
    }

    @Test
    void aTamperedBodyOrAWrongSecretIs401AndStoresNothing(DataSource db) {
        byte[] body = delivery(false, text("01HLINEEVENT00000000000001", "m1", "hi"));
        Map<String, String> signed = line.signatureHeaders(body, java.time.Instant.now());
        assertThat(line.postRaw(bytes(new String(body, StandardCharsets.UTF_8).replace("hi", "ho")), "application/json", signed).status())
                .isEqualTo(401);
        SignedDeliverySender wrong = new SignedDeliverySender(server.uri("/webhooks/line"), Secret.of("not_the_secret"), SignatureScheme.line());
        assertThat(wrong.postSigned(body, "application/json").body()).isEqualTo("{\"error\":\"bad_signature\"}");
        assertThat(line.postRaw(body, "application/json", Map.of()).body()).isEqualTo("{\"error\":\"missing_signature\"}");
        assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event")).isZero();
    }

    @Test
    void eachEventOfADeliveryIsOneRowAndARedeliveryAddsNone(DataSource db) {
        byte[] first = delivery(false, text("01HLINEEVENT00000000000011", "m11", "one"), text("01HLINEEVENT00000000000012", "m12", "two"),
                "{\"type\":\"follow\",\"mode\":\"active\",\"timestamp\":1749416383000,\"source\":{\"type\":\"user\",\"userId\":\"U4af4980629\"},"
                        + "\"webhookEventId\":\"01HLINEEVENT00000000000013\",\"deliveryContext\":{\"isRedelivery\":false},\"replyToken\":\"rt_secret\"}");
        assertThat(line.postSigned(first, "application/json").body()).isEqualTo("{\"status\":\"stored\"}");
        // LINE redelivers with isRedelivery=true: other bytes, the same webhookEventIds.
        byte[] again = delivery(true, text("01HLINEEVENT00000000000011", "m11", "one"), text("01HLINEEVENT00000000000012", "m12", "two"));
        assertThat(line.postSigned(again, "application/json").body()).isEqualTo("{\"status\":\"duplicate\"}");

        assertThat(Sql.string(db, "SELECT string_agg(event_id || ' ' || event_type || ' ' || delivery_count, ', ' ORDER BY event_id)"
                + " FROM webhook_event WHERE channel = 'line'"))
                .isEqualTo("01HLINEEVENT00000000000011 message 2, 01HLINEEVENT00000000000012 message 2, 01HLINEEVENT00000000000013 follow 1");
        Await.workScheduled(db);
        assertThat(Sql.string(db, "SELECT string_agg(provider || '/' || account_id || '/' || conversation_id || '/' || message_id || ' ' || text, ', '"
                + " ORDER BY message_id) FROM channel_message"))
                .isEqualTo("line/U_destination/C_group/m11 one, line/U_destination/C_group/m12 two");
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'line-event'")).isEqualTo(3);
        Await.until("the line-event handler ran every event", Duration.ofSeconds(20),
                () -> Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'line-event' AND state = 'done'") == 3);
    }

    @Test
    void anImageSetOfThreeIsOneCompleteAlbumDecision(DataSource db) {
        // LINE sends the images of a set as separate events, here in two deliveries and out of order.
        assertThat(line.postSigned(delivery(false, image("01HLINEIMAGE00000000000002", "i2", 2), image("01HLINEIMAGE00000000000003", "i3", 3)),
                "application/json").status()).isEqualTo(200);
        assertThat(line.postSigned(delivery(false, image("01HLINEIMAGE00000000000001", "i1", 1)), "application/json").status()).isEqualTo(200);
        String key = "[\"default\", \"line\", \"U_destination\", \"C_group\", \"set-1\"]";
        Await.until("the album decision", Duration.ofSeconds(30),
                () -> Sql.string(db, "SELECT kind FROM album_decision WHERE album_key = '" + key + "'") != null);
        assertThat(Sql.string(db, "SELECT kind || ' ' || jsonb_array_length(child_ids) || ' ' || completed_by FROM album_decision"
                + " WHERE album_key = '" + key + "' AND version = 1")).startsWith("complete 3");
        assertThat(Sql.count(db, "SELECT count(*) FROM album_decision")).isEqualTo(1);
    }

    private static String text(String eventId, String messageId, String text) {
        return "{\"type\":\"message\",\"message\":{\"type\":\"text\",\"id\":\"" + messageId + "\",\"quoteToken\":\"q\",\"text\":\"" + text + "\"},"
                + "\"webhookEventId\":\"" + eventId + "\",\"deliveryContext\":{\"isRedelivery\":false},\"timestamp\":1749416383000,"
                + "\"source\":{\"type\":\"group\",\"groupId\":\"C_group\",\"userId\":\"U4af4980629\"},\"replyToken\":\"rt_secret\",\"mode\":\"active\"}";
    }

    private static String image(String eventId, String messageId, int index) {
        return "{\"type\":\"message\",\"message\":{\"type\":\"image\",\"id\":\"" + messageId + "\",\"contentProvider\":{\"type\":\"line\"},"
                + "\"imageSet\":{\"id\":\"set-1\",\"index\":" + index + ",\"total\":3}},\"webhookEventId\":\"" + eventId + "\","
                + "\"deliveryContext\":{\"isRedelivery\":false},\"timestamp\":1749416383000,"
                + "\"source\":{\"type\":\"group\",\"groupId\":\"C_group\",\"userId\":\"U4af4980629\"},\"replyToken\":\"rt\",\"mode\":\"active\"}";
    }

    private static byte[] delivery(boolean redelivery, String... events) {
        String joined = String.join(",", events);
        return bytes("{\"destination\":\"U_destination\",\"events\":[" + (redelivery ? joined.replace("\"isRedelivery\":false", "\"isRedelivery\":true") : joined) + "]}");
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
