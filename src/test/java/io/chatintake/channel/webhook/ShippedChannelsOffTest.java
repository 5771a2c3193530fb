package io.chatintake.channel.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.testkit.WebhookServer;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.slf4j.LoggerFactory;

/** Every shipped channel without its secret: the routes start, each says so once, and answers 503 not_configured. */
@ExtendWith(TestDatabase.class)
class ShippedChannelsOffTest {
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    @Test
    void withoutTheirSecretsTheChannelsAreOffAndSaySoOnce(DataSource db) throws Exception {
        ListAppender<ILoggingEvent> logs = new ListAppender<>();
        logs.start();
        Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        root.addAppender(logs);
        try (WebhookServer server = WebhookServer.start(db, Map.of("discord.answers", "{\"*\": {\"type\": 5} }"),
                "file:routes/slack.yaml,file:routes/line.yaml,file:routes/whatsapp.yaml,file:routes/telegram-webhook.yaml,file:routes/discord.yaml")) {
            for (String path : List.of("/webhooks/slack", "/webhooks/line", "/webhooks/whatsapp", "/webhooks/telegram/main", "/webhooks/discord")) {
                HttpResponse<String> response = HTTP.send(HttpRequest.newBuilder(server.uri(path))
                        .POST(HttpRequest.BodyPublishers.ofString("{\"id\":1}")).build(), HttpResponse.BodyHandlers.ofString());
                assertThat(response.statusCode()).as(path).isEqualTo(503);
                assertThat(response.body()).as(path).isEqualTo("{\"error\":\"not_configured\"}");
            }
            HttpResponse<String> check = HTTP.send(HttpRequest.newBuilder(server.uri(
                    "/webhooks/whatsapp?hub.mode=subscribe&hub.verify_token=&hub.challenge=1")).GET().build(), HttpResponse.BodyHandlers.ofString());
            assertThat(check.statusCode()).isEqualTo(503);
        } finally {
            root.detachAppender(logs);
        }
        List<String> lines = logs.list.stream().map(ILoggingEvent::getFormattedMessage).toList();
        for (String variable : List.of("SLACK_SIGNING_SECRETS", "LINE_CHANNEL_SECRETS", "WHATSAPP_APP_SECRETS", "TELEGRAM_WEBHOOK_SECRET",
                "WHATSAPP_VERIFY_TOKEN", "DISCORD_PUBLIC_KEYS")) {
            assertThat(lines.stream().filter(line -> line.contains("OFF") && line.contains("set " + variable))).as(variable).hasSize(1);
        }
        assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event")).isZero();
    }
}
