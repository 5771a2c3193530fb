package io.chatintake.channel.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Secret;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.testkit.WebhookServer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** The README's "Add a channel" guide, its YAML read from README.md as users copy it, run with the real dispatcher. */
@ExtendWith(TestDatabase.class)
class AddAChannelGuideTest {
    private static final String BEGIN = "<!-- add-a-channel:yaml -->\n```yaml\n";
    private static final String END = "```\n<!-- /add-a-channel:yaml -->";
    private static final String SCHEME = "custom;signature-header=X-Heron-Signature;timestamp-header=X-Heron-Timestamp;"
            + "template={timestamp}.{body};encoding=base64;prefix=v1=";

    @TempDir
    Path dir;

    @Test
    void theGuidesRouteStoresSignedDeliveriesAndItsHandlerRunsThem(DataSource db) throws Exception {
        String readme = Files.readString(Path.of("README.md"));
        int start = readme.indexOf(BEGIN);
        assertThat(start).as("the guide's YAML between its markers").isPositive();
        Path route = Files.writeString(dir.resolve("heron.yaml"), readme.substring(start + BEGIN.length(), readme.indexOf(END, start)));

        Map<String, String> settings = Map.of("heron.signing-secrets", "heron_secret_1", "telegram.echo-replies", "false");
        try (WebhookServer server = WebhookServer.startWithWork(db, settings,
                "file:" + route + ",file:routes/albums.yaml,file:routes/handlers.yaml")) {
            SignedDeliverySender heron = new SignedDeliverySender(server.uri("/webhooks/heron"), Secret.of("heron_secret_1"),
                    SignatureScheme.parse(SCHEME));
            byte[] batch = bytes("{\"tenant\":\"t-42\",\"batch\":[" + event("e1", "m1", "first", 1) + "," + event("e2", "m2", "second", 2)
                    + ",{\"uid\":\"e3\",\"kind\":\"room.joined\",\"room\":\"r-1\"}]}");
            assertThat(heron.postSigned(batch, "application/json").body()).isEqualTo("{\"status\":\"stored\"}");
            assertThat(heron.postSigned(batch, "application/json").body()).isEqualTo("{\"status\":\"duplicate\"}");
            SignedDeliverySender wrong = new SignedDeliverySender(server.uri("/webhooks/heron"), Secret.of("guess"), SignatureScheme.parse(SCHEME));
            assertThat(wrong.postSigned(batch, "application/json").status()).isEqualTo(401);

            assertThat(Sql.string(db, "SELECT string_agg(event_id || ' ' || event_type || ' ' || account_id || ' ' || delivery_count, ', '"
                    + " ORDER BY event_id) FROM webhook_event WHERE channel = 'heron'"))
                    .isEqualTo("e1 message.new t-42 2, e2 message.new t-42 2, e3 room.joined t-42 2");
            Await.until("the guide's handler ran every event", Duration.ofSeconds(20),
                    () -> Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'heron-event' AND state = 'done'") == 3);
            assertThat(Sql.string(db, "SELECT string_agg(provider || '/' || account_id || '/' || conversation_id || '/' || message_id || ' ' || text,"
                    + " ', ' ORDER BY message_id) FROM channel_message")).isEqualTo("heron/t-42/r-1/m1 first, heron/t-42/r-1/m2 second");
            Await.until("the gallery's album decision", Duration.ofSeconds(20),
                    () -> "complete 2".equals(Sql.string(db, "SELECT kind || ' ' || jsonb_array_length(child_ids) FROM album_decision")));
        }
    }

    private static String event(String uid, String messageId, String text, int position) {
        return "{\"uid\":\"" + uid + "\",\"kind\":\"message.new\",\"at\":\"" + Instant.now() + "\",\"room\":\"r-1\","
                + "\"msg\":{\"id\":\"" + messageId + "\",\"text\":\"" + text + "\",\"gallery\":{\"id\":\"g-1\",\"position\":" + position
                + ",\"size\":2}}}";
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
