package io.chatintake.channel.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Secret;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.Response;
import io.chatintake.testkit.LogCapture;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.testkit.WebhookServer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** {@code routes/discord.yaml} as shipped, over real HTTP and PostgreSQL. */
@ExtendWith(TestDatabase.class)
class DiscordWebhookTest {
    private static final String ROUTES = "file:routes/discord.yaml";
    /** As in config/application.properties, with a space between closing braces (Camel reads "}}" as a placeholder's end). */
    private static final String ANSWERS = "{\"3\": {\"type\": 6}, \"*\": {\"type\": 5} }";

    @Test
    void pingIsAnsweredPongAndAComponentInteractionIsStoredWithItsMessageAndAnsweredPerType(DataSource db) {
        Map<String, String> settings = Map.of("discord.public-keys", PublicKeySchemesTest.RFC8032_PUBLIC_1, "discord.answers", ANSWERS);
        try (WebhookServer server = WebhookServer.start(db, settings, ROUTES)) {
            SignedDeliverySender discord = new SignedDeliverySender(server.uri("/webhooks/discord"),
                    Secret.of(PublicKeySchemesTest.RFC8032_SEED_1), SignatureScheme.ed25519());
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
                SignedDeliverySender discord = new SignedDeliverySender(server.uri("/webhooks/discord"),
                        Secret.of(PublicKeySchemesTest.RFC8032_SEED_1), SignatureScheme.ed25519());
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

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
