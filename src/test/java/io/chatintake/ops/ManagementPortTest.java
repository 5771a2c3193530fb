package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.testkit.WebhookServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * With {@code chat-intake.management.port} set, health, metrics and {@code /status} are served on
 * that port only: on the webhook port they are 404, and the webhooks are not on the management port.
 */
@ExtendWith(TestDatabase.class)
class ManagementPortTest {
    private static final String TOKEN = "status-token-SECRET-management-port-0123";
    private static final int WEBHOOK_PORT = RunnerProcess.freePort();
    private static final int MANAGEMENT_PORT = RunnerProcess.freePort();

    private static WebhookServer server;
    private final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    static void start() {
        server = WebhookServer.start(TestDatabase.dataSource(), Map.of("chat-intake.http.port", Integer.toString(WEBHOOK_PORT),
                ManagementPort.KEY, Integer.toString(MANAGEMENT_PORT), StatusPage.TOKEN, TOKEN,
                "unifyport.signing-secrets", "whsec-SECRET-management-port"), "file:routes/unifyport-webhook.yaml");
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    @Test
    void observeAndStatusAre404OnTheWebhookPortAndServedOnTheManagementPort() throws Exception {
        for (String path : new String[] {"/observe/health", "/observe/health/live", "/observe/health/ready", "/observe/metrics",
                "/status", "/status?token=" + TOKEN}) {
            assertThat(get(WEBHOOK_PORT, path, null).statusCode()).as("webhook port " + path).isEqualTo(404);
        }
        assertThat(post(WEBHOOK_PORT, "/status/retry").statusCode()).as("webhook port POST /status/retry").isEqualTo(404);

        assertThat(get(MANAGEMENT_PORT, "/observe/health/ready", null).statusCode()).isEqualTo(200);
        HttpResponse<String> health = get(MANAGEMENT_PORT, "/observe/health", null);
        assertThat(health.statusCode()).isEqualTo(200);
        assertThat(health.body()).contains("\"status\"");
        HttpResponse<String> metrics = get(MANAGEMENT_PORT, "/observe/metrics", null);
        assertThat(metrics.statusCode()).isEqualTo(200);
        assertThat(metrics.body()).contains("# TYPE");
        HttpResponse<String> page = get(MANAGEMENT_PORT, "/status", "Bearer " + TOKEN);
        assertThat(page.statusCode()).isEqualTo(200);
        assertThat(page.body()).contains("chat-intake status");
        assertThat(get(MANAGEMENT_PORT, "/status?token=" + TOKEN, null).statusCode()).as("a session opens there").isEqualTo(303);
        assertThat(post(MANAGEMENT_PORT, "/status/retry").statusCode()).as("actions are there, still needing a session")
                .isEqualTo(401);
    }

    @Test
    void theWebhooksStayOnTheWebhookPortOnly() throws Exception {
        assertThat(post(WEBHOOK_PORT, "/webhooks/unifyport").statusCode()).as("an unsigned delivery is refused by its route")
                .isEqualTo(401);
        assertThat(post(MANAGEMENT_PORT, "/webhooks/unifyport").statusCode()).isEqualTo(404);
    }

    private HttpResponse<String> get(int port, String path, String authorization) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).GET();
        if (authorization != null) {
            request.header("Authorization", authorization);
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> post(int port, String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString("{}")).build(),
                HttpResponse.BodyHandlers.ofString());
    }
}
