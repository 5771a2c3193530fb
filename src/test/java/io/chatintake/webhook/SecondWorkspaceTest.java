package io.chatintake.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Secret;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.testkit.WebhookServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** The README's "second workspace" YAML, taken from the README itself, works next to the shipped route. */
@ExtendWith(TestDatabase.class)
class SecondWorkspaceTest {
    @TempDir
    Path dir;

    @Test
    void aSecondWorkspaceIsJustYamlAndPropertiesWithItsOwnPathSecretsAndKeys(DataSource db) throws Exception {
        String readme = Files.readString(Path.of("README.md"));
        int start = readme.indexOf("```yaml\n- beans:\n    - name: unifyportAcmeIntake");
        assertThat(start).as("the README shows the second-workspace YAML").isPositive();
        String yaml = readme.substring(start + "```yaml\n".length(), readme.indexOf("```", start + 7));
        Path file = Files.writeString(dir.resolve("unifyport-acme.yaml"), yaml);

        Map<String, String> settings = Map.of("unifyport.signing-secrets", "secret_default",
                "unifyport-acme.signing-secrets", "secret_acme");
        try (WebhookServer server = WebhookServer.start(db, settings, "file:routes/unifyport-*.yaml,file:" + file)) {
            SignedDeliverySender toDefault = new SignedDeliverySender(server.uri("/webhooks/unifyport"), Secret.of("secret_default"));
            SignedDeliverySender toAcme = new SignedDeliverySender(server.uri("/webhooks/unifyport/acme"), Secret.of("secret_acme"));
            SignedDeliverySender acmeSecretOnDefault = new SignedDeliverySender(server.uri("/webhooks/unifyport"), Secret.of("secret_acme"));
            byte[] body = UnifyPortWebhookTest.message("evt_same", "m1", "x");

            assertThat(toDefault.post(toDefault.sign("evt_same", body, TimestampForm.RFC3339)).status()).isEqualTo(200);
            assertThat(toAcme.post(toAcme.sign("evt_same", body, TimestampForm.RFC3339)).status()).isEqualTo(200);
            assertThat(acmeSecretOnDefault.post(acmeSecretOnDefault.sign("evt_other", body, TimestampForm.RFC3339)).status())
                    .isEqualTo(401);
        }
        assertThat(UnifyPortWebhookTest.count(db, "SELECT count(DISTINCT workspace) FROM webhook_event WHERE event_id = 'evt_same'"))
                .isEqualTo(2);
        assertThat(UnifyPortWebhookTest.count(db, "SELECT count(*) FROM channel_message")).isEqualTo(2);
    }
}
