package io.chatintake.routes;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.chatintake.config.Settings;
import io.chatintake.testkit.Manual;
import io.chatintake.testkit.Sql;
import io.chatintake.work.EffectGuard;
import io.chatintake.work.GuardedEffect;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.camel.builder.AdviceWith;
import org.apache.camel.component.mock.MockEndpoint;
import org.apache.camel.spi.Registry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;


/**
 * routes/operator-alerts.yaml: an alert message goes to the operator chat through telegram-bot (a
 * mock here), once per message; the README's Slack destination posts it once to a webhook.
 */
class OperatorAlertSendRouteTest extends RouteTestSupport {

    @Override
    protected Map<String, String> settings() {
        return Map.of("operator-alerts.telegram-chat-id", "-100555");
    }

    @Override
    protected void bindBeans(Registry registry, Settings settings) {
        registry.bind(GuardedEffect.BEAN, new GuardedEffect(new EffectGuard(db)));
    }

    @Test
    void sendsEachFindingOnceToTheOperatorChat() throws Exception {
        loadRoutes("routes/operator-alerts.yaml");
        AdviceWith.adviceWith(context, "operator-alert-send", r -> r.mockEndpointsAndSkip("telegram-bot:*"));
        MockEndpoint bot = getMockEndpoint("mock:telegram-bot:main");
        bot.expectedBodiesReceived("work item 5 parked");
        bot.expectedHeaderReceived("ChatIntakeTelegramChatId", "-100555");
        context.start();

        template.sendBodyAndHeader("direct:operator-alert-send", "work item 5 parked", "ChatIntakeWorkIdempotencyKey", "work-parked:5:1");
        template.sendBodyAndHeader("direct:operator-alert-send", "work item 5 parked", "ChatIntakeWorkIdempotencyKey", "work-parked:5:1");

        bot.assertIsSatisfied();
        assertThat(Sql.string(db, "SELECT effect_key || ' ' || state FROM outbound_effect")).isEqualTo("work-parked:5:1:operator-alert done");
    }

    /** The README's Slack destination, its steps as printed there, against a webhook on loopback. */
    @Test
    void theReadmesSlackWebhookDestinationPostsTheTextAsJsonOnce(@TempDir Path dir) throws Exception {
        String readme = Manual.text();
        Matcher example = Pattern.compile("```yaml\n(            steps:\n              - marshal: \\{json.*?)```", Pattern.DOTALL).matcher(readme);
        assertThat(example.find()).as("the README's Slack example").isTrue();
        List<String> received = new CopyOnWriteArrayList<>();
        HttpServer slack = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        slack.createContext("/", exchange -> {
            received.add(exchange.getRequestURI().getPath() + " " + exchange.getRequestHeaders().getFirst("Content-Type") + " "
                    + new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
            exchange.sendResponseHeaders(200, 2);
            exchange.getResponseBody().write("ok".getBytes(StandardCharsets.UTF_8));
            exchange.close();
        });
        slack.start();
        try {
            String steps = example.group(1)
                    .replace("{{env:SLACK_ALERTS_WEBHOOK_PATH}}", "/services/T1/B2/SECRET")
                    .replace("https://hooks.slack.com", "http://127.0.0.1:" + slack.getAddress().getPort());
            String yaml = Files.readString(Path.of("routes/operator-alerts.yaml"), StandardCharsets.UTF_8);
            Path file = dir.resolve("operator-alerts.yaml");
            Files.writeString(file, yaml.substring(0, yaml.indexOf("            steps:")) + steps);
            loadRoutes(file.toString());
            context.start();

            template.sendBodyAndHeader("direct:operator-alert-send", "STARTED: bot 'main' said \"no\"", "ChatIntakeWorkIdempotencyKey", "operator-alert-message:7");
            template.sendBodyAndHeader("direct:operator-alert-send", "STARTED: bot 'main' said \"no\"", "ChatIntakeWorkIdempotencyKey", "operator-alert-message:7");

            assertThat(received).containsExactly("/services/T1/B2/SECRET application/json {\"text\": \"STARTED: bot 'main' said \\\"no\\\"\"}");
            assertThat(Sql.string(db, "SELECT effect_key || ' ' || state FROM outbound_effect")).isEqualTo("operator-alert-message:7:operator-alert done");
        } finally {
            slack.stop(0);
        }
    }
}
