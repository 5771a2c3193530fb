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
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.spec.ECGenParameterSpec;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** {@code routes/discord.yaml} as shipped, over real HTTP and PostgreSQL. */
@ExtendWith(TestDatabase.class)
class DiscordWebhookTest {
    /** The channel with its handlers: a stored interaction's work then finds its route instead of waiting for one. */
    private static final String ROUTES = "file:routes/discord.yaml,file:routes/discord-handlers.yaml";
    /** As in config/application.properties, with a space between closing braces (Camel reads "}}" as a placeholder's end). */
    private static final String ANSWERS = "{\"3\": {\"type\": 6}, \"*\": {\"type\": 5} }";

    @Test
    void pingIsAnsweredPongAndAComponentInteractionIsStoredWithItsMessageAndAnsweredPerType(DataSource db) {
        Map<String, String> settings = Map.of("discord.public-keys", PublicKeySchemesTest.RFC8032_PUBLIC_1, "discord.answers", ANSWERS);
        try (WebhookServer server = WebhookServer.start(db, settings, ROUTES)) {
            SignedDeliverySender discord = discord(server);
            Response pong = discord.postSigned(bytes("{\"id\":\"1180000000000000000\",\"application_id\":\"app_1\",\"type\":1,\"version\":1}"),
                    "application/json");
            assertThat(pong.status()).isEqualTo(200);
            assertThat(pong.body()).isEqualTo("{\"type\":1}");
            assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event")).isZero();

            byte[] click = bytes("{\"id\":\"1180000000000000002\",\"application_id\":\"app_1\",\"type\":3,\"token\":\"tok_component_1\","
                    + "\"channel_id\":\"chan_9\",\"data\":{\"custom_id\":\"approve\",\"component_type\":2},"
                    + "\"message\":{\"id\":\"msg_7\",\"channel_id\":\"chan_9\",\"content\":\"Approve the deploy?\","
                    + "\"timestamp\":\"2026-12-06T10:00:00.000000+00:00\"}}");
            assertThat(discord.postSigned(click, "application/json").body()).isEqualTo("{\"type\":6}");
            byte[] command = bytes("{\"id\":\"1180000000000000003\",\"application_id\":\"app_1\",\"type\":2,\"token\":\"tok_command_1\","
                    + "\"channel_id\":\"chan_9\",\"data\":{\"name\":\"deploy\"}}");
            assertThat(discord.postSigned(command, "application/json").body()).isEqualTo("{\"type\":5}");
            assertThat(Sql.string(db, "SELECT string_agg(event_id || ' ' || event_type || ' ' || account_id, ', ' ORDER BY event_id)"
                    + " FROM webhook_event WHERE channel = 'discord'"))
                    .isEqualTo("1180000000000000002 3 app_1, 1180000000000000003 2 app_1");
            Await.workScheduled(db);
            assertThat(Sql.string(db, "SELECT provider || '/' || account_id || '/' || conversation_id || '/' || message_id || ' ' || text"
                    + " FROM channel_message")).isEqualTo("discord/app_1/chan_9/msg_7 Approve the deploy?");
        }
    }

    @Test
    void aKeyThatDoesNotParseKeepsTheChannelOffWithOneLineAndNoStackTrace(DataSource db) {
        List<String> lines;
        try (LogCapture logs = new LogCapture()) {
            Map<String, String> settings = Map.of("discord.public-keys", PublicKeySchemesTest.RFC8032_PUBLIC_1 + ",not-a-key",
                    "discord.answers", ANSWERS);
            try (WebhookServer server = WebhookServer.start(db, settings, ROUTES)) {
                SignedDeliverySender discord = discord(server);
                Response response = discord.postSigned(bytes("{\"id\":\"1180000000000000009\",\"type\":2}"), "application/json");
                assertThat(response.status()).isEqualTo(503);
                assertThat(response.body()).isEqualTo("{\"error\":\"not_configured\"}");
            }
            lines = logs.lines();
        }
        assertThat(lines.stream().filter(line -> line.contains("discord webhook: OFF"))).singleElement().asString()
                .contains("public key 2 of 2 is not an ed25519 public key", "DISCORD_PUBLIC_KEYS", "answered 503");
        assertThat(lines).noneMatch(line -> line.contains("not-a-key")).noneMatch(line -> line.contains("\tat "));
        assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event")).isZero();
    }

    @Test
    void databaseTroubleIs503WithNothingStoredAndDiscordsRetryIsStoredOnce(DataSource db) {
        Map<String, String> settings = Map.of("discord.public-keys", PublicKeySchemesTest.RFC8032_PUBLIC_1, "discord.answers", ANSWERS);
        try (WebhookServer server = WebhookServer.start(db, settings, ROUTES)) {
            SignedDeliverySender discord = discord(server);
            byte[] command = bytes("{\"id\":\"1180000000000000011\",\"application_id\":\"app_1\",\"type\":2,\"token\":\"tok_outage_1\"}");
            Sql.execute(db, "ALTER TABLE webhook_event RENAME TO webhook_event_away");
            try {
                Response during = discord.postSigned(command, "application/json");
                assertThat(during.status()).isEqualTo(503);
                assertThat(during.body()).isEqualTo("{\"error\":\"storage_unavailable\"}");
            } finally {
                Sql.execute(db, "ALTER TABLE webhook_event_away RENAME TO webhook_event");
            }
            assertThat(discord.postSigned(command, "application/json").body()).isEqualTo("{\"type\":5}");
            assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event WHERE event_id = '1180000000000000011'")).isEqualTo(1);
        }
    }

    /** Another provider signing with ECDSA P-256 is a route file too: the same scheme machinery, its keys from the configuration. */
    @Test
    void anEcdsaP256ChannelInYamlStoresADeliverySignedWithATestKey(DataSource db, @TempDir Path dir) throws Exception {
        KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
        generator.initialize(new ECGenParameterSpec("secp256r1"));
        KeyPair pair = generator.generateKeyPair();
        Path route = Files.writeString(dir.resolve("acme.yaml"), """
                - route:
                    id: acme-webhook
                    from:
                      uri: "platform-http:/webhooks/acme?httpMethodRestrict=POST&muteException=true"
                      steps:
                        - to:
                            uri: "webhook-inbox:acme"
                            parameters:
                              scheme: ecdsa-p256-sha256
                              secretsKey: acme.public-keys
                              events: "/events/*"
                              eventId: /sg_event_id
                              eventType: /event
                - route:
                    id: acme-event
                    from:
                      uri: "work:acme-event"
                      steps:
                        - log: "acme event ${header.ChatIntakeEventId}"
                """);
        Map<String, String> settings = Map.of("acme.public-keys", Base64.getEncoder().encodeToString(pair.getPublic().getEncoded()));
        try (WebhookServer server = WebhookServer.start(db, settings, "file:" + route)) {
            SignedDeliverySender acme = new SignedDeliverySender(server.uri("/webhooks/acme"),
                    Secret.of(Base64.getEncoder().encodeToString(pair.getPrivate().getEncoded())), SignatureScheme.ecdsaP256Sha256());
            byte[] events = bytes("{\"events\":[{\"sg_event_id\":\"sg_1\",\"event\":\"delivered\"},{\"sg_event_id\":\"sg_2\",\"event\":\"open\"}]}");
            assertThat(acme.postSigned(events, "application/json").body()).isEqualTo("{\"status\":\"stored\"}");
            SignedDeliverySender wrongKey = new SignedDeliverySender(server.uri("/webhooks/acme"),
                    Secret.of(Base64.getEncoder().encodeToString(generator.generateKeyPair().getPrivate().getEncoded())),
                    SignatureScheme.ecdsaP256Sha256());
            assertThat(wrongKey.postSigned(bytes("{\"events\":[{\"sg_event_id\":\"sg_3\"}]}"), "application/json").status()).isEqualTo(401);
        }
        assertThat(Sql.string(db, "SELECT string_agg(event_id || ' ' || event_type, ', ' ORDER BY event_id) FROM webhook_event"
                + " WHERE channel = 'acme'")).isEqualTo("sg_1 delivered, sg_2 open");
    }

    /** Signs as Discord does, with the fixed test key. */
    private static SignedDeliverySender discord(WebhookServer server) {
        return new SignedDeliverySender(server.uri("/webhooks/discord"), Secret.of(PublicKeySchemesTest.RFC8032_SEED_1),
                SignatureScheme.ed25519());
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
