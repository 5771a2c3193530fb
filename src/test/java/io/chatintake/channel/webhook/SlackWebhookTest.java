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
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** {@code routes/slack.yaml} as shipped, over real HTTP and PostgreSQL. */
@ExtendWith(TestDatabase.class)
class SlackWebhookTest {
    /**
     * Slack's published example (api.slack.com, "Verifying requests from Slack"): a slash command,
     * form-encoded, signed in 2018 with the example signing secret.
     */
    private static final String EXAMPLE_SECRET = "8f742231b10e8888abcd99yyyzzz85a5";
    private static final String EXAMPLE_TIMESTAMP = "1531420618";
    private static final String EXAMPLE_BODY = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V"
            + "&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2F"
            + "hooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN"
            + "&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    private static final String EXAMPLE_SIGNATURE = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
    private static final String FORM = "application/x-www-form-urlencoded";

    private static WebhookServer server;
    private static SignedDeliverySender slack;
    private static LogCapture logs;

    @BeforeAll
    static void start() {
        logs = new LogCapture();
        server = WebhookServer.start(TestDatabase.dataSource(), Map.of("slack.signing-secrets", "slack_secret_1," + EXAMPLE_SECRET),
                "file:routes/slack.yaml");
        slack = new SignedDeliverySender(server.uri("/webhooks/slack"), Secret.of("slack_secret_1"), SignatureScheme.slack());
    }

    @AfterAll
    static void stop() {
        server.close();
        logs.close();
        List<String> lines = logs.lines();
        assertThat(lines).as("logs were captured").anyMatch(line -> line.contains("slack webhook: on"));
        for (String secret : List.of("slack_secret_1", EXAMPLE_SECRET, "deploy staging please", "xyzz0WbapA4vBCDEFasx0q6G",
                "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", EXAMPLE_SIGNATURE.substring(3))) {
            assertThat(lines).as("no log line holds a secret, signature or body").noneMatch(line -> line.contains(secret));
        }
    }

    @Test
    void slacksPublishedFormEncodedExampleIsVerifiedOverItsRawBytes(DataSource db) {
        // Signed in 2018: refused as stale within the 300 s window, accepted once the window covers it.
        assertThat(slack.postRaw(bytes(EXAMPLE_BODY), FORM, example()).body()).isEqualTo("{\"error\":\"stale_timestamp\"}");
        assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event")).isZero();
        Map<String, String> settings = Map.of("slack.signing-secrets", EXAMPLE_SECRET, "slack.timestamp-tolerance-seconds", "1000000000");
        try (WebhookServer wide = WebhookServer.start(db, settings, "file:routes/slack.yaml")) {
            SignedDeliverySender sender = new SignedDeliverySender(wide.uri("/webhooks/slack"), Secret.of(EXAMPLE_SECRET), SignatureScheme.slack());
            assertThat(sender.postRaw(bytes(EXAMPLE_BODY), FORM, example()).body()).isEqualTo("{\"status\":\"stored\"}");
            Map<String, String> tampered = example();
            tampered.put("X-Slack-Request-Timestamp", "1531420619");
            assertThat(sender.postRaw(bytes(EXAMPLE_BODY), FORM, tampered).body()).isEqualTo("{\"error\":\"bad_signature\"}");
        }
        assertThat(Sql.string(db, "SELECT event_id || ' ' || event_type || ' ' || account_id || ' ' || (payload ->> 'command')"
                + " || ' ' || (body = convert_to('" + EXAMPLE_BODY + "', 'UTF8')) FROM webhook_event WHERE channel = 'slack'"))
                .isEqualTo("398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c slash_command T1DC2JH3J /webhook-collect true");
    }

    @Test
    void aTamperedBodyAWrongSecretAndAStaleTimestampAre401AndStoreNothing(DataSource db) {
        byte[] body = callback("Ev0TAMPER1", "hello");
        Map<String, String> headers = slack.signatureHeaders(body, Instant.now());
        assertThat(slack.postRaw(callback("Ev0TAMPER1", "hellO"), "application/json", headers).body()).isEqualTo("{\"error\":\"bad_signature\"}");
        SignedDeliverySender wrong = new SignedDeliverySender(server.uri("/webhooks/slack"), Secret.of("not_it"), SignatureScheme.slack());
        assertThat(wrong.postSigned(body, "application/json").body()).isEqualTo("{\"error\":\"bad_signature\"}");
        Map<String, String> stale = slack.signatureHeaders(body, Instant.now().minusSeconds(301));
        assertThat(slack.postRaw(body, "application/json", stale).body()).isEqualTo("{\"error\":\"stale_timestamp\"}");
        assertThat(slack.postRaw(body, "application/json", stale).status()).isEqualTo(401);
        assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event")).isZero();
    }

    @Test
    void urlVerificationIsAnsweredWithItsChallengeAndNotStored(DataSource db) {
        byte[] body = bytes("{\"token\":\"Jhj5dZrVaK7ZwHHjRyZWjbDl\",\"challenge\":\"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P\","
                + "\"type\":\"url_verification\"}");
        Response response = slack.postSigned(body, "application/json");
        assertThat(response.status()).isEqualTo(200);
        assertThat(response.body()).isEqualTo("3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P");
        assertThat(slack.postRaw(body, "application/json", Map.of()).status()).as("unsigned: no challenge").isEqualTo(401);
        assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event")).isZero();
    }

    @Test
    void aRetriedEventIsOneRowWithItsMessageAndWork(DataSource db) {
        byte[] body = callback("Ev08MFMKH6", "deploy staging please");
        assertThat(slack.postSigned(body, "application/json").body()).isEqualTo("{\"status\":\"stored\"}");
        // Slack retries with X-Slack-Retry-Num and a fresh signature: the same event_id.
        Map<String, String> retry = new HashMap<>(slack.signatureHeaders(body, Instant.now()));
        retry.put("X-Slack-Retry-Num", "1");
        assertThat(slack.postRaw(body, "application/json", retry).body()).isEqualTo("{\"status\":\"duplicate\"}");
        assertThat(Sql.string(db, "SELECT event_id || ' ' || event_type || ' ' || delivery_count FROM webhook_event"))
                .isEqualTo("Ev08MFMKH6 message 2");
        Await.workScheduled(db);
        assertThat(Sql.string(db, "SELECT provider || '/' || account_id || '/' || conversation_id || '/' || message_id || ' ' || text"
                + " FROM channel_message")).isEqualTo("slack/T01234567/C04567890/1715600000.001500 deploy staging please");
        assertThat(Sql.string(db, "SELECT source_key FROM work_item WHERE kind = 'slack-event'")).isEqualTo("default:slack:Ev08MFMKH6");
    }

    @Test
    void anInteractivityPayloadIsStoredUnderItsTriggerId(DataSource db) {
        String payload = "{\"type\":\"block_actions\",\"team\":{\"id\":\"T9TK3CUKW\"},\"user\":{\"id\":\"UA8RXUSPL\"},"
                + "\"trigger_id\":\"12466734323.1395872398\",\"actions\":[{\"action_id\":\"approve\"}]}";
        byte[] body = bytes("payload=" + URLEncoder.encode(payload, StandardCharsets.UTF_8));
        assertThat(slack.postSigned(body, FORM).body()).isEqualTo("{\"status\":\"stored\"}");
        assertThat(Sql.string(db, "SELECT event_id || ' ' || event_type || ' ' || account_id || ' ' || (payload -> 'payload' -> 'actions' -> 0 ->> 'action_id')"
                + " FROM webhook_event")).isEqualTo("12466734323.1395872398 block_actions T9TK3CUKW approve");
    }

    private static Map<String, String> example() {
        Map<String, String> headers = new HashMap<>();
        headers.put("X-Slack-Request-Timestamp", EXAMPLE_TIMESTAMP);
        headers.put("X-Slack-Signature", EXAMPLE_SIGNATURE);
        return headers;
    }

    private static byte[] callback(String eventId, String text) {
        return bytes("{\"token\":\"deprecated\",\"team_id\":\"T01234567\",\"api_app_id\":\"A01234567\",\"type\":\"event_callback\","
                + "\"event_id\":\"" + eventId + "\",\"event_time\":1715600000,\"event\":{\"type\":\"message\",\"user\":\"U02345678\","
                + "\"text\":\"" + text + "\",\"ts\":\"1715600000.001500\",\"channel\":\"C04567890\",\"event_ts\":\"1715600000.001500\"}}");
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
