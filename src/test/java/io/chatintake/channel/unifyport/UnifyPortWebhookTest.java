package io.chatintake.channel.unifyport;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Secret;
import io.chatintake.sim.PlainHttpConnection;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.Delivery;
import io.chatintake.sim.SignedDeliverySender.Response;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.LogCapture;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.testkit.WebhookServer;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code routes/unifyport-webhook.yaml} as shipped, over real HTTP on loopback and a real
 * PostgreSQL, driven by the same {@link SignedDeliverySender} the demo and benchmarks use.
 */
@ExtendWith(TestDatabase.class)
class UnifyPortWebhookTest {
    private static final String PATH = "/webhooks/unifyport";
    private static final HttpClient HTTP = HttpClient.newHttpClient();
    private static WebhookServer server;
    private static SignedDeliverySender sender;

    @BeforeAll
    static void startRoute() {
        server = WebhookServer.start(TestDatabase.dataSource(), settings("secret_old,secret_1"));
        sender = new SignedDeliverySender(server.uri(PATH), Secret.of("secret_1"));
    }

    @AfterAll
    static void stopRoute() {
        server.close();
    }

    static Map<String, String> settings(String secrets) {
        Map<String, String> settings = new HashMap<>();
        settings.put("unifyport.signing-secrets", secrets);
        settings.put("unifyport.workspace", "ws-test");
        settings.put("unifyport.statement-timeout-millis", "1000");
        return settings;
    }

    @Test
    void theContractVectorsAreAcceptedVerbatimWhenTheirTimeIsWithinTolerance(DataSource db) throws Exception {
        Map<String, String> settings = settings("secret_1");
        // The vectors were signed in 2024 and 2026: widen the window instead of faking the clock.
        settings.put("unifyport.timestamp-tolerance-seconds", "1000000000");
        try (WebhookServer wide = WebhookServer.start(db, settings)) {
            SignedDeliverySender raw = new SignedDeliverySender(wide.uri(PATH), Secret.of("unused"));
            byte[] body = "{\"type\":\"message.received\"}".getBytes(StandardCharsets.UTF_8);
            Response rfc = raw.post(new Delivery("evt_vector_1", "dlv_1", "2026-06-08T12:34:56Z",
                    "cc29f54eb308510c1310b2f2940d5dd57019b2a411753d2c3949d08834af3f7a", body));
            Response unix = raw.post(new Delivery("evt_vector_2", "dlv_2", "1716800000",
                    "fce0d986263ea0d961d4d349602f8eb7885f96b75be8ceb0df61bb1a93aa61d3", body));
            assertThat(rfc.status()).as(rfc.body()).isEqualTo(200);
            assertThat(unix.status()).as(unix.body()).isEqualTo(200);
        }
        // With the default ±300 s the same (now old) vector is stale.
        Response stale = sender.post(new Delivery("evt_vector_3", "dlv_3", "2026-06-08T12:34:56Z",
                "cc29f54eb308510c1310b2f2940d5dd57019b2a411753d2c3949d08834af3f7a",
                "{\"type\":\"message.received\"}".getBytes(StandardCharsets.UTF_8)));
        assertThat(stale.status()).isEqualTo(401);
        assertThat(stale.body()).isEqualTo("{\"error\":\"stale_timestamp\"}");
        assertThat(eventIds(db)).containsExactlyInAnyOrder("evt_vector_1", "evt_vector_2");
    }

    @Test
    void bothTimestampFormsAreAccepted(DataSource db) throws Exception {
        assertThat(sender.post(sender.sign("evt_rfc", message("evt_rfc", "m1", "hi"), TimestampForm.RFC3339)).status()).isEqualTo(200);
        assertThat(sender.post(sender.sign("evt_unix", message("evt_unix", "m2", "hi"), TimestampForm.UNIX_SECONDS)).status()).isEqualTo(200);
        assertThat(eventIds(db)).containsExactlyInAnyOrder("evt_rfc", "evt_unix");
    }

    @Test
    void theBenchmarksKeptAliveConnectionCarriesManyDeliveriesAndReadsEachAnswer(DataSource db) throws Exception {
        try (PlainHttpConnection connection = new PlainHttpConnection(server.uri(PATH), 10_000)) {
            for (int i = 0; i < 5; i++) {
                String eventId = "evt_plain_" + i;
                Response response = sender.post(sender.sign(eventId, message(eventId, "m" + i, "hi"), TimestampForm.UNIX_SECONDS), connection);
                assertThat(response.status()).as(response.body()).isEqualTo(200);
                assertThat(response.body()).isEqualTo("{\"status\":\"stored\"}");
            }
            Response refused = sender.post(sender.sign("evt_plain_0", message("evt_plain_0", "m0", "hi"), TimestampForm.UNIX_SECONDS)
                    .withSignature("0".repeat(64)), connection);
            assertThat(refused.status()).isEqualTo(401);
            assertThat(refused.body()).isEqualTo("{\"error\":\"bad_signature\"}");
        }
        assertThat(eventIds(db)).containsExactlyInAnyOrder("evt_plain_0", "evt_plain_1", "evt_plain_2", "evt_plain_3", "evt_plain_4");
    }

    @Test
    void aTamperedBodyAWrongSecretAndAStaleOrFutureTimestampAre401AndStoreNothing(DataSource db) throws Exception {
        Delivery good = sender.sign("evt_1", message("evt_1", "m1", "hello"), TimestampForm.RFC3339);
        assertRejected(sender.post(good.withBody(message("evt_1", "m1", "hellO"))), "bad_signature");

        SignedDeliverySender stranger = new SignedDeliverySender(server.uri(PATH), Secret.of("secret_guess"));
        assertRejected(stranger.post(stranger.sign("evt_1", message("evt_1", "m1", "hello"), TimestampForm.RFC3339)), "bad_signature");

        long now = Instant.now().getEpochSecond();
        byte[] body = message("evt_1", "m1", "hello");
        assertRejected(sender.post(sender.sign("evt_1", body, Long.toString(now - 400))), "stale_timestamp");
        assertRejected(sender.post(sender.sign("evt_1", body, Instant.ofEpochSecond(now + 400).toString())), "future_timestamp");
        assertThat(count(db, "SELECT count(*) FROM webhook_event")).isZero();
        assertThat(metrics()).contains("outcome=\"stale_timestamp\"").contains("outcome=\"bad_signature\"");
    }

    @Test
    void duringRotationBothSecretsAreAcceptedAndARemovedSecretIsNot(DataSource db) throws Exception {
        SignedDeliverySender old = new SignedDeliverySender(server.uri(PATH), Secret.of("secret_old"));
        assertThat(old.post(old.sign("evt_old", message("evt_old", "m1", "a"), TimestampForm.RFC3339)).status()).isEqualTo(200);
        assertThat(sender.post(sender.sign("evt_new", message("evt_new", "m2", "b"), TimestampForm.RFC3339)).status()).isEqualTo(200);
        SignedDeliverySender removed = new SignedDeliverySender(server.uri(PATH), Secret.of("secret_removed"));
        assertRejected(removed.post(removed.sign("evt_gone", message("evt_gone", "m3", "c"), TimestampForm.RFC3339)), "bad_signature");
        assertThat(eventIds(db)).containsExactlyInAnyOrder("evt_old", "evt_new");
    }

    @Test
    void eachMissingHeader(DataSource db) throws Exception {
        Delivery good = sender.sign("evt_h", message("evt_h", "m1", "x"), TimestampForm.RFC3339);
        assertRejected(sender.post(good.withSignature(null)), "missing_signature");
        assertRejected(sender.post(good.withTimestamp(null)), "missing_timestamp");
        // Without X-Device-Event-Id the body's id is the key; without a delivery id it is still stored.
        assertThat(sender.post(good.withEventId(null)).status()).isEqualTo(200);
        assertThat(sender.post(new Delivery("evt_h", null, good.timestamp(), good.signature(), good.body())).status()).isEqualTo(200);
        assertThat(eventIds(db)).containsExactly("evt_h");
        assertThat(count(db, "SELECT delivery_count FROM webhook_event")).isEqualTo(2);
    }

    @Test
    void anOversizedBodyIs413AndStoresNothing(DataSource db) throws Exception {
        byte[] big = new byte[1024 * 1024 + 1];
        Arrays.fill(big, (byte) ' ');
        big[0] = '{';
        big[big.length - 1] = '}';
        Response response = sender.post(sender.sign("evt_big", big, TimestampForm.RFC3339));
        assertThat(response.status()).isEqualTo(413);
        assertThat(response.body()).isEqualTo("{\"error\":\"body_too_large\"}");
        assertThat(count(db, "SELECT count(*) FROM webhook_event")).isZero();
    }

    @Test
    void aRedeliveryIsAcknowledgedAndCountedOnTheSameRow(DataSource db) throws Exception {
        byte[] body = message("evt_dup", "m1", "once");
        List<Response> first = sender.deliver("evt_dup", body, TimestampForm.RFC3339, 3, Duration.ZERO);
        Response second = sender.post(sender.sign("evt_dup", body, TimestampForm.UNIX_SECONDS));
        assertThat(first).singleElement().extracting(Response::status).isEqualTo(200);
        assertThat(first.get(0).body()).isEqualTo("{\"status\":\"stored\"}");
        assertThat(second.status()).isEqualTo(200);
        assertThat(second.body()).isEqualTo("{\"status\":\"duplicate\"}");
        assertThat(count(db, "SELECT count(*) FROM webhook_event")).isEqualTo(1);
        assertThat(count(db, "SELECT delivery_count FROM webhook_event")).isEqualTo(2);
        assertThat(text(db, "SELECT last_delivery_id FROM webhook_event")).isEqualTo(second.delivery().deliveryId());
        assertThat(text(db, "SELECT first_delivery_id FROM webhook_event")).isEqualTo(first.get(0).delivery().deliveryId());
        Await.workScheduled(db);
        assertThat(count(db, "SELECT count(*) FROM channel_message")).isEqualTo(1);
        assertThat(text(db, "SELECT source_key || ' ' || chat_key FROM work_item WHERE kind = 'unifyport-event'"))
                .as("scheduled once, with the event, in its conversation")
                .isEqualTo("ws-test:unifyport:evt_dup ws-test:whatsapp:acc_1:conv_9");
    }

    @Test
    void aReplayWithAnEditedEventIdHeaderIsStillTheSameEvent(DataSource db) throws Exception {
        Delivery signed = sender.sign("evt_signed", message("evt_signed", "m1", "x"), TimestampForm.RFC3339);
        assertThat(sender.post(signed).body()).isEqualTo("{\"status\":\"stored\"}");
        // The header is not covered by the signature; the body's id is.
        assertThat(sender.post(signed.withEventId("evt_edited")).body()).isEqualTo("{\"status\":\"duplicate\"}");
        assertThat(eventIds(db)).containsExactly("evt_signed");
    }

    @Test
    void twentyConcurrentDeliveriesOfOneEventStoreOneRowAndAllAre2xx(DataSource db) throws Exception {
        byte[] body = message("evt_race", "m1", "race");
        ExecutorService pool = Executors.newFixedThreadPool(20);
        CountDownLatch go = new CountDownLatch(1);
        List<Future<Response>> answers = new ArrayList<>();
        try {
            for (int i = 0; i < 20; i++) {
                Delivery delivery = sender.sign("evt_race", body, i % 2 == 0 ? TimestampForm.RFC3339 : TimestampForm.UNIX_SECONDS);
                answers.add(pool.submit(() -> {
                    go.await();
                    return sender.post(delivery);
                }));
            }
            go.countDown();
            for (Future<Response> answer : answers) {
                assertThat(answer.get().status()).as(answer.get().body()).isEqualTo(200);
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(count(db, "SELECT count(*) FROM webhook_event")).isEqualTo(1);
        assertThat(count(db, "SELECT delivery_count FROM webhook_event")).isEqualTo(20);
        Await.workScheduled(db);
        assertThat(count(db, "SELECT count(*) FROM channel_message")).isEqualTo(1);
        assertThat(count(db, "SELECT count(*) FROM work_item")).isEqualTo(1);
        assertThat(answers.stream().filter(a -> body(a).contains("\"stored\"")).count()).isEqualTo(1);
    }

    @Test
    void anAuthenticBodyThatIsNotJsonIsStoredRawAndAcknowledged(DataSource db) throws Exception {
        byte[] body = "not json {".getBytes(StandardCharsets.UTF_8);
        assertThat(sender.post(sender.sign("evt_raw", body, TimestampForm.RFC3339)).status()).isEqualTo(200);
        try (Connection c = db.getConnection();
             ResultSet rs = c.createStatement().executeQuery("SELECT body, payload, parse_error, event_type FROM webhook_event")) {
            assertThat(rs.next()).isTrue();
            assertThat(rs.getBytes("body")).isEqualTo(body);
            assertThat(rs.getString("payload")).isNull();
            assertThat(rs.getString("parse_error")).isEqualTo("invalid_json");
            assertThat(rs.getString("event_type")).isNull();
        }
    }

    @Test
    void authenticBodiesJsonbRefusesAreStoredRawAndAcknowledgedNotRetriedForever(DataSource db) throws Exception {
        byte[] surrogate = "{\"id\":\"evt_half\",\"type\":\"message.received\",\"data\":{\"text\":\"half \\ud83d\"}}"
                .getBytes(StandardCharsets.UTF_8);
        // Java's UTF-16 writes a byte-order mark first: Jackson reads that, PostgreSQL does not.
        byte[] utf16 = "{\"id\":\"evt_utf16\",\"type\":\"message.received\"}".getBytes(StandardCharsets.UTF_16);
        Response half = sender.post(sender.sign("evt_half", surrogate, TimestampForm.RFC3339));
        Response wide = sender.post(sender.sign("evt_utf16", utf16, TimestampForm.RFC3339));
        Response again = sender.post(sender.sign("evt_half", surrogate, TimestampForm.RFC3339));
        assertThat(half.status()).as(half.body()).isEqualTo(200);
        assertThat(wide.status()).as(wide.body()).isEqualTo(200);
        assertThat(again.body()).as("a retry is a duplicate, not a second failure").isEqualTo("{\"status\":\"duplicate\"}");
        Map<String, String> reasons = new HashMap<>();
        try (Connection c = db.getConnection(); ResultSet rs = c.createStatement().executeQuery(
                "SELECT event_id, body, payload, parse_error, delivery_count FROM webhook_event ORDER BY event_id")) {
            while (rs.next()) {
                assertThat(rs.getBytes("body")).isEqualTo(rs.getString("event_id").equals("evt_half") ? surrogate : utf16);
                assertThat(rs.getString("payload")).isNull();
                reasons.put(rs.getString("event_id"), rs.getString("parse_error"));
            }
        }
        assertThat(reasons).isEqualTo(Map.of("evt_half", "lone_surrogate", "evt_utf16", "not_utf8"));
        Await.workScheduled(db);
        assertThat(count(db, "SELECT count(*) FROM work_item WHERE kind = 'unifyport-event'")).as("handed on").isEqualTo(2);
    }

    @Test
    void anUnknownEventTypeIsStoredAndAcknowledged(DataSource db) throws Exception {
        byte[] body = SignedDeliverySender.envelope("evt_new_kind", "galaxy.exploded", "line", "acc_1", Instant.now(), "{\"x\":1}");
        assertThat(sender.post(sender.sign("evt_new_kind", body, TimestampForm.RFC3339)).status()).isEqualTo(200);
        assertThat(text(db, "SELECT event_type FROM webhook_event")).isEqualTo("galaxy.exploded");
        assertThat(text(db, "SELECT payload->>'provider' FROM webhook_event")).isEqualTo("line");
        assertThat(count(db, "SELECT count(*) FROM channel_message")).isZero();
    }

    @Test
    void messageEventsUpsertTheChildUpdateItAndOnlyMarkItDeleted(DataSource db) throws Exception {
        Instant t0 = Instant.parse("2026-07-01T09:15:00Z");
        // Delivered out of order: the edit arrives before the message it edits.
        post(SignedDeliverySender.envelope("evt_upd", "message.updated", "whatsapp", "acc_1", t0.plusSeconds(60),
                messageData("12345678901234567890123", "edited", null)));
        post(SignedDeliverySender.envelope("evt_rcv", "message.received", "whatsapp", "acc_1", t0,
                messageData("12345678901234567890123", "original",
                        ",\"attachments\":[{\"url\":\"https://media.example/signed?sig=abc\"}],\"album\":{\"id\":\"alb_1\",\"index\":2}")));
        Await.workScheduled(db);
        try (Connection c = db.getConnection(); ResultSet rs = c.createStatement().executeQuery(
                "SELECT message_id, conversation_id, text, album_id, album_index, album_total, attachments->0->>'url' AS url,"
                        + " first_event_id, deleted_at FROM channel_message")) {
            assertThat(rs.next()).isTrue();
            assertThat(rs.getString("message_id")).isEqualTo("12345678901234567890123");
            assertThat(rs.getString("conversation_id")).isEqualTo("conv_9");
            assertThat(rs.getString("text")).as("the later edit wins over the earlier message").isEqualTo("edited");
            assertThat(rs.getString("album_id")).isEqualTo("alb_1");
            assertThat(rs.getInt("album_index")).isEqualTo(2);
            assertThat(rs.getObject("album_total")).isNull();
            assertThat(rs.getString("url")).isEqualTo("https://media.example/signed?sig=abc");
            assertThat(rs.getString("first_event_id")).isEqualTo("evt_upd");
            assertThat(rs.getObject("deleted_at")).isNull();
            assertThat(rs.next()).isFalse();
        }
        post(SignedDeliverySender.envelope("evt_del", "message.deleted", "whatsapp", "acc_1", t0.plusSeconds(120),
                messageData("12345678901234567890123", null, null)));
        Await.workScheduled(db);
        assertThat(count(db, "SELECT count(*) FROM channel_message WHERE deleted_at IS NOT NULL AND text = 'edited'")).isEqualTo(1);
        // An older edit arriving last neither overwrites newer content nor undeletes.
        post(SignedDeliverySender.envelope("evt_upd_old", "message.updated", "whatsapp", "acc_1", t0.plusSeconds(30),
                messageData("12345678901234567890123", "stale edit", null)));
        Await.workScheduled(db);
        assertThat(count(db, "SELECT count(*) FROM channel_message WHERE deleted_at IS NOT NULL AND text = 'edited'")).isEqualTo(1);
        assertThat(count(db, "SELECT count(*) FROM webhook_event")).isEqualTo(4);
    }

    @Test
    void aStatementBlockedPastTheTimeoutIs503AndTheRetryIsStored(DataSource db) throws Exception {
        byte[] body = message("evt_slow", "m1", "slow");
        try (Connection locker = db.getConnection()) {
            locker.setAutoCommit(false);
            locker.createStatement().execute("LOCK TABLE webhook_event IN ACCESS EXCLUSIVE MODE");
            long started = System.nanoTime();
            Response blocked = sender.post(sender.sign("evt_slow", body, TimestampForm.RFC3339));
            long tookMs = (System.nanoTime() - started) / 1_000_000;
            locker.rollback();
            assertThat(blocked.status()).as(blocked.body()).isEqualTo(503);
            assertThat(tookMs).as("bounded by the 1 s statement timeout").isLessThan(3000);
        }
        assertThat(sender.post(sender.sign("evt_slow", body, TimestampForm.RFC3339)).status()).isEqualTo(200);
        assertThat(count(db, "SELECT delivery_count FROM webhook_event")).isEqualTo(1);
    }

    @Test
    void theResponseEchoesNoRequestHeader() throws Exception {
        Delivery delivery = sender.sign("evt_echo", message("evt_echo", "m1", "x"), TimestampForm.RFC3339);
        HttpResponse<String> response = HTTP.send(HttpRequest.newBuilder(server.uri(PATH))
                .header("X-Device-Event-Id", delivery.eventId())
                .header("X-Device-Timestamp", delivery.timestamp())
                .header("X-Device-Signature", delivery.signature())
                .header("X-Custom-Probe", "echo-me")
                .POST(HttpRequest.BodyPublishers.ofByteArray(delivery.body())).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.headers().map().keySet()).map(String::toLowerCase)
                .doesNotContain("x-device-signature", "x-device-timestamp", "x-device-event-id", "x-custom-probe");
        assertThat(response.headers().firstValue("content-type")).hasValue("application/json");
    }

    @Test
    void withoutASecretTheRouteRefusesWith503(DataSource db) throws Exception {
        try (WebhookServer off = WebhookServer.start(db, settings(""))) {
            SignedDeliverySender anyone = new SignedDeliverySender(off.uri(PATH), Secret.of("whatever"));
            Response response = anyone.post(anyone.sign("evt_off", message("evt_off", "m1", "x"), TimestampForm.RFC3339));
            assertThat(response.status()).isEqualTo(503);
            assertThat(response.body()).isEqualTo("{\"error\":\"not_configured\"}");
        }
        assertThat(count(db, "SELECT count(*) FROM webhook_event")).isZero();
    }

    private static void post(byte[] body) {
        String id = new String(body, StandardCharsets.UTF_8).replaceAll("^\\{\"id\":\"([^\"]+)\".*$", "$1");
        Response response = sender.post(sender.sign(id, body, TimestampForm.RFC3339));
        assertThat(response.status()).as(response.body()).isEqualTo(200);
    }

    static byte[] message(String eventId, String messageId, String text) {
        return SignedDeliverySender.envelope(eventId, "message.received", "whatsapp", "acc_1", Instant.now(),
                messageData(messageId, text, null));
    }

    private static String messageData(String messageId, String text, String extraMessageFields) {
        return "{\"conversation\":{\"id\":\"conv_9\",\"type\":\"user\"},\"sender\":{\"id\":\"u1\",\"type\":\"user\",\"name\":\"A\"},"
                + "\"message\":{\"id\":\"" + messageId + "\",\"type\":\"text\""
                + (text == null ? "" : ",\"text\":\"" + text + "\"")
                + ",\"direction\":\"in\",\"sent_at\":\"2026-07-01T09:14:59Z\""
                + (extraMessageFields == null ? "" : extraMessageFields) + "}}";
    }

    @Test
    void anUnsignedDeliveryIdIsLoggedCutTo64CharactersOnEachRejection() {
        Delivery signed = sender.sign("evt_long_id", message("evt_long_id", "m1", "hi"), TimestampForm.RFC3339);
        Delivery forged = new Delivery(signed.eventId(), "d".repeat(4000), signed.timestamp(), "0".repeat(64), signed.body());
        try (LogCapture log = new LogCapture()) {
            assertRejected(sender.post(forged), "bad_signature");
            assertThat(log.lines()).anySatisfy(line -> assertThat(line)
                    .contains("unifyport webhook: delivery " + "d".repeat(64) + "... (4000 characters) rejected (bad_signature)"));
            assertThat(log.lines()).noneMatch(line -> line.contains("d".repeat(65)));
        }
    }

    private static void assertRejected(Response response, String reason) {
        assertThat(response.status()).as(response.body()).isEqualTo(401);
        assertThat(response.body()).isEqualTo("{\"error\":\"" + reason + "\"}");
    }

    private static String metrics() throws Exception {
        return HTTP.send(HttpRequest.newBuilder(server.uri("/observe/metrics")).GET().build(),
                HttpResponse.BodyHandlers.ofString()).body();
    }

    private static String body(Future<Response> answer) {
        try {
            return answer.get().body();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static List<String> eventIds(DataSource db) throws SQLException {
        List<String> ids = new ArrayList<>();
        try (Connection c = db.getConnection(); ResultSet rs = c.createStatement().executeQuery("SELECT event_id FROM webhook_event")) {
            while (rs.next()) {
                ids.add(rs.getString(1));
            }
        }
        return ids;
    }

    static long count(DataSource db, String sql) throws SQLException {
        try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static String text(DataSource db, String sql) throws SQLException {
        try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getString(1);
        }
    }
}
