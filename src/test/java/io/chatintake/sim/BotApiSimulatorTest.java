package io.chatintake.sim;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The Bot API simulator's refusals, which tests of replies rely on. */
class BotApiSimulatorTest {
    @Test
    void theRateLimitedShareOfSendsIsSpreadEvenlySoAFewSendsAlwaysMeetIt() throws Exception {
        try (BotApiSimulator simulator = BotApiSimulator.start()) {
            String token = simulator.addBot(7, "FAKE-simulator-test", "simulator_test_bot");
            simulator.rateLimitSends(token, 0.3, 2);
            HttpClient client = HttpClient.newHttpClient();
            List<Integer> statuses = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                HttpRequest send = HttpRequest.newBuilder(URI.create(simulator.url() + "/bot" + token + "/sendMessage"))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString("{\"chat_id\":5,\"text\":\"t" + i + "\"}")).build();
                HttpResponse<String> answer = client.send(send, HttpResponse.BodyHandlers.ofString());
                statuses.add(answer.statusCode());
                if (answer.statusCode() == 429) {
                    assertThat(answer.body()).contains("\"retry_after\":2");
                }
            }

            assertThat(statuses).containsExactly(200, 200, 200, 429, 200, 200, 429, 200, 200, 429);
            assertThat(simulator.sentMessages(token)).hasSize(7);
        }
    }

    @Test
    void theRequestLogKeepsArrivalOrderAndAReadDoesNotChangeAfterwards() throws Exception {
        try (BotApiSimulator simulator = BotApiSimulator.start()) {
            String token = simulator.addBot(8, "FAKE-simulator-log-test", "simulator_log_bot");
            HttpClient client = HttpClient.newHttpClient();
            for (String method : List.of("getMe", "getWebhookInfo")) {
                client.send(HttpRequest.newBuilder(URI.create(simulator.url() + "/bot" + token + "/" + method)).build(),
                        HttpResponse.BodyHandlers.ofString());
            }
            List<BotApiSimulator.Request> firstRead = simulator.requests();
            client.send(HttpRequest.newBuilder(URI.create(simulator.url() + "/botUNKNOWN/getMe")).build(), HttpResponse.BodyHandlers.ofString());

            assertThat(firstRead).extracting(BotApiSimulator.Request::method).containsExactly("getMe", "getWebhookInfo");
            assertThat(simulator.requests()).extracting(BotApiSimulator.Request::method).containsExactly("getMe", "getWebhookInfo", "getMe");
            assertThat(simulator.requests()).extracting(BotApiSimulator.Request::botId).containsExactly(8L, 8L, -1L);
        }
    }
}
