package io.chatintake.channel.unifyport;


import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.channel.webhook.SignatureScheme;
import io.chatintake.channel.webhook.SignatureVerifier;
import io.chatintake.config.Secret;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.Manual;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.testkit.WebhookServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
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


/** What users do in YAML alone: a second workspace (the README's own example), another signature scheme. */
@ExtendWith(TestDatabase.class)
class WebhookRouteYamlTest {
    @TempDir
    Path dir;

    @Test
    void aSecondWorkspaceIsJustYamlAndPropertiesWithItsOwnPathSecretsAndKeys(DataSource db) throws Exception {
        String readme = Manual.text();
        int start = readme.indexOf("```yaml\n- route:\n    id: unifyport-acme-webhook");
        assertThat(start).as("the README shows the second-workspace YAML").isPositive();
        String yaml = readme.substring(start + "```yaml\n".length(), readme.indexOf("```", start + 7));
        Path file = Files.writeString(dir.resolve("unifyport-acme.yaml"), yaml);

        Map<String, String> settings = Map.of("unifyport.signing-secrets", "secret_default",
                "unifyport-acme.signing-secrets", "secret_acme");
        // The real work dispatcher: each workspace's event reaches the work:unifyport-event route from storage.
        try (WebhookServer server = WebhookServer.startWithWork(db, settings, "file:routes/unifyport-*.yaml,file:" + file)) {
            SignedDeliverySender toDefault = new SignedDeliverySender(server.uri("/webhooks/unifyport"), Secret.of("secret_default"));
            SignedDeliverySender toAcme = new SignedDeliverySender(server.uri("/webhooks/unifyport/acme"), Secret.of("secret_acme"));
            SignedDeliverySender acmeSecretOnDefault = new SignedDeliverySender(server.uri("/webhooks/unifyport"), Secret.of("secret_acme"));
            byte[] body = UnifyPortWebhookTest.message("evt_same", "m1", "x");

            assertThat(toDefault.post(toDefault.sign("evt_same", body, TimestampForm.RFC3339)).status()).isEqualTo(200);
            assertThat(toAcme.post(toAcme.sign("evt_same", body, TimestampForm.RFC3339)).status()).isEqualTo(200);
            assertThat(acmeSecretOnDefault.post(acmeSecretOnDefault.sign("evt_other", body, TimestampForm.RFC3339)).status())
                    .isEqualTo(401);
            Await.until("both workspaces' events handled", Duration.ofSeconds(20), () -> Sql.string(db,
                    "SELECT string_agg(source_key || ' ' || state, ', ' ORDER BY source_key) FROM work_item WHERE kind = 'unifyport-event'")
                    .equals("acme:unifyport:evt_same done, default:unifyport:evt_same done"));
        }
        assertThat(UnifyPortWebhookTest.count(db, "SELECT count(DISTINCT workspace) FROM webhook_event WHERE event_id = 'evt_same'"))
                .isEqualTo(2);
        assertThat(UnifyPortWebhookTest.count(db, "SELECT count(*) FROM channel_message")).isEqualTo(2);
    }

    @Test
    void aRouteSelectsAndParameterisesItsSignatureSchemeInYaml(DataSource db) throws Exception {
        String scheme = "custom;signature-header=X-Sig;timestamp-header=X-Time;template={timestamp}.{body};encoding=base64;prefix=v1=";
        Path file = Files.writeString(dir.resolve("custom-hook.yaml"), """
                - route:
                    from:
                      uri: "platform-http:/webhooks/custom?httpMethodRestrict=POST&muteException=true"
                      steps:
                        - to:
                            uri: "webhook-inbox:custom-hook"
                            parameters:
                              workspace: custom
                              scheme: "%s"
                              secretsKey: custom-hook.signing-secrets
                              eventId: /id
                """.formatted(scheme));
        try (WebhookServer server = WebhookServer.start(db, Map.of("unifyport.signing-secrets", "unused",
                "custom-hook.signing-secrets", "custom_secret"), "file:" + file)) {
            byte[] body = "{\"id\":\"evt_custom\"}".getBytes(StandardCharsets.UTF_8);
            String time = Long.toString(Instant.now().getEpochSecond());
            String signature = SignatureVerifier.signatureHeaderValue(SignatureScheme.parse(scheme), Secret.of("custom_secret"),
                    null, time, body);
            assertThat(post(server.uri("/webhooks/custom"), body, "X-Time", time, "X-Sig", signature).statusCode()).isEqualTo(200);
            assertThat(post(server.uri("/webhooks/custom"), body, "X-Time", time, "X-Sig", "v1=AAAA").body())
                    .isEqualTo("{\"error\":\"bad_signature\"}");
        }
        assertThat(UnifyPortWebhookTest.count(db, "SELECT count(*) FROM webhook_event WHERE channel = 'custom-hook' AND workspace = 'custom'"))
                .isEqualTo(1);
    }

    private static HttpResponse<String> post(URI uri, byte[] body, String... headers) throws Exception {
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(uri).headers(headers)
                .POST(HttpRequest.BodyPublishers.ofByteArray(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aFailingHandlerNeverChangesTheAnswer(DataSource db) throws Exception {
        Path handler = Files.writeString(dir.resolve("failing-handler.yaml"), """
                - route:
                    id: unifyport-event
                    from:
                      uri: "work:unifyport-event"
                      steps:
                        - throwException:
                            exceptionType: java.lang.IllegalStateException
                            message: "business work failed"
                """);
        try (WebhookServer server = WebhookServer.start(db, Map.of("unifyport.signing-secrets", "secret_1"),
                "file:routes/unifyport-webhook.yaml,file:" + handler)) {
            SignedDeliverySender sender = new SignedDeliverySender(server.uri("/webhooks/unifyport"), Secret.of("secret_1"));
            byte[] body = UnifyPortWebhookTest.message("evt_handler_fails", "m1", "x");
            SignedDeliverySender.Response response = sender.post(sender.sign("evt_handler_fails", body, TimestampForm.RFC3339));
            assertThat(response.status()).isEqualTo(200);
            assertThat(response.body()).isEqualTo("{\"status\":\"stored\"}");
        }
        assertThat(UnifyPortWebhookTest.eventIds(db)).containsExactly("evt_handler_fails");
    }
}
