package io.chatintake.channel.webhook;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class WebhookRouteFileTest {
    @Test
    void theShippedRouteGivesItsMappingOptionsAndNoneOfTheEndpointsOthers() {
        var options = WebhookRouteFile.mappingOptions(Path.of("routes/unifyport-webhook.yaml"), "unifyport");

        assertThat(options).containsEntry("eventId", "/id | header:X-Device-Event-Id").containsEntry("deleteEvents", "message.deleted");
        assertThat(options.keySet()).allMatch(EventMapping.OPTIONS::contains).doesNotContain("workspace", "scheme", "secretsKey");
    }

    @Test
    void aFileWithoutTheChannelsStepSaysWhichFileAndChannel(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("other.yaml"), """
                - route:
                    from:
                      uri: "platform-http:/hooks/other"
                      steps:
                        - to:
                            uri: "webhook-inbox:other"
                            parameters:
                              eventId: /id
                """);

        assertThat(WebhookRouteFile.mappingOptions(file, "other")).containsOnlyKeys("eventId");
        assertThatThrownBy(() -> WebhookRouteFile.eventMapping(file, "unifyport"))
                .hasMessage(file + " has no webhook-inbox:unifyport step");
    }

    @Test
    void theKeysRoutesNameAsSecretAreFoundAndPublicKeysAreNot() {
        assertThat(WebhookRouteFile.secretKeys(Path.of("routes"))).contains("line.channel-secrets", "slack.signing-secrets",
                "whatsapp.app-secrets", "whatsapp.verify-token", "telegram.webhook-secret", "unifyport.signing-secrets")
                .doesNotContain("discord.public-keys");
        assertThat(WebhookRouteFile.secretKeys(Path.of("no-such-directory"))).isEmpty();
    }
}
