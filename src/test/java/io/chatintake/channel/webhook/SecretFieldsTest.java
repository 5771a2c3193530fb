package io.chatintake.channel.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.chatintake.config.Secret;
import io.chatintake.config.Settings;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.support.RedactingLayout;
import io.chatintake.support.Redactor;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.testkit.WebhookServer;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.slf4j.LoggerFactory;

/**
 * The shipped LINE and Slack routes declare the reply token and the response URL secret fields:
 * a handler that fails quoting its whole body (as a careless one does) leaves neither in the
 * stored error text nor in a log line. A secret under a custom key name (a route's
 * {@code secretsKey}) is masked like one whose name says so.
 */
@ExtendWith(TestDatabase.class)
class SecretFieldsTest {
    private static final String REPLY_TOKEN = "nHuyWiB7yP5Zw52FIkcQobQuGDXCTA";
    private static final String RESPONSE_URL = "https://hooks.slack.com/commands/T1DC2JH3J/397700885554/96rGlfmibIGlgcZRskXaIFfN";
    private static final String CUSTOM_SECRET = "acme-hmac-key-0123456789";

    private static WebhookServer server;
    private static final ListAppender<ILoggingEvent> logs = new ListAppender<>();

    @BeforeAll
    static void start() throws Exception {
        Path dir = Files.createTempDirectory("secret-fields");
        // The shipped webhook routes; their handlers replaced by ones that fail quoting the body.
        for (String channel : List.of("line", "slack")) {
            Files.writeString(dir.resolve(channel + ".yaml"), Files.readString(Path.of("routes", channel + ".yaml"))
                    .replace("uri: \"work:" + channel + "-event\"", "uri: \"direct:" + channel + "-event-shipped\""));
        }
        Files.writeString(dir.resolve("careless-handlers.yaml"), """
                - route:
                    id: careless-line
                    from:
                      uri: "work:line-event"
                      steps:
                        - log: "replying to ${body}"
                        - throwException:
                            exceptionType: java.lang.IllegalStateException
                            message: "the reply failed for ${body}"
                - route:
                    id: careless-slack
                    from:
                      uri: "work:slack-event"
                      steps:
                        - log: "answering ${body}"
                        - throwException:
                            exceptionType: java.lang.IllegalStateException
                            message: "the answer failed for ${body}"
                """);
        // A copy of the WhatsApp route whose secret lives under a name without "secret" in it.
        Files.writeString(dir.resolve("acme.yaml"), Files.readString(Path.of("routes", "whatsapp.yaml"))
                .replace("secretsKey: whatsapp.app-secrets", "secretsKey: acme.hmac-keys")
                .replace("/webhooks/whatsapp", "/webhooks/acme").replace("webhook-inbox:whatsapp", "webhook-inbox:acme")
                .replace("id: whatsapp-", "id: acme-").replace("whatsapp-event", "acme-event"));
        logs.start();
        ((Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).addAppender(logs);
        String files = "file:" + dir + "/*.yaml,file:routes/handlers.yaml";
        server = WebhookServer.startWithWork(TestDatabase.dataSource(), Map.of("line.channel-secrets", "line_secret_1",
                "slack.signing-secrets", "slack_secret_1", "acme.hmac-keys", CUSTOM_SECRET, "work.max-attempts", "1",
                "telegram.echo-replies", "false"), files);
    }

    @AfterAll
    static void stop() {
        ((Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).detachAppender(logs);
        server.close();
    }

    @Test
    void lineReplyTokensAndSlackResponseUrlsLeaveNoTraceWhenAHandlerFails(DataSource db) {
        String event = "{\"type\":\"message\",\"message\":{\"type\":\"text\",\"id\":\"m1\",\"text\":\"hi\"},"
                + "\"webhookEventId\":\"01HSECRETFIELDS0000000001\",\"timestamp\":1749416383000,"
                + "\"source\":{\"type\":\"user\",\"userId\":\"U1\"},\"replyToken\":\"" + REPLY_TOKEN + "\",\"mode\":\"active\"}";
        SignedDeliverySender line = new SignedDeliverySender(server.uri("/webhooks/line"), Secret.of("line_secret_1"), SignatureScheme.line());
        assertThat(line.postSigned(bytes("{\"destination\":\"U_d\",\"events\":[" + event + "]}"), "application/json").status()).isEqualTo(200);
        SignedDeliverySender slack = new SignedDeliverySender(server.uri("/webhooks/slack"), Secret.of("slack_secret_1"), SignatureScheme.slack());
        String command = "team_id=T1&channel_id=C1&user_id=U2&command=%2Fcollect&text=&response_url="
                + URLEncoder.encode(RESPONSE_URL, StandardCharsets.UTF_8) + "&trigger_id=398738663015.1.secretfields";
        assertThat(slack.postSigned(bytes(command), "application/x-www-form-urlencoded").status()).isEqualTo(200);

        Await.until("both handlers failed and their items parked", Duration.ofSeconds(30),
                () -> Sql.count(db, "SELECT count(*) FROM work_item WHERE kind IN ('line-event', 'slack-event') AND state = 'parked'") == 2);

        List<String> errors = Sql.rows(db, "SELECT last_error FROM work_item WHERE kind IN ('line-event', 'slack-event')").stream()
                .map(row -> (String) row.get(0)).toList();
        assertThat(errors).hasSize(2).allSatisfy(error -> assertThat(error).contains("[redacted]")
                .doesNotContain(REPLY_TOKEN).doesNotContain("96rGlfmibIGlgcZRskXaIFfN"));
        assertThat(errors).anyMatch(error -> error.contains("the reply failed for"))
                .anyMatch(error -> error.contains("the answer failed for"));
        List<String> lines = rendered();
        assertThat(lines).as("the careless handlers logged their bodies").anyMatch(l -> l.contains("replying to"))
                .anyMatch(l -> l.contains("answering"));
        assertThat(lines).noneMatch(l -> l.contains(REPLY_TOKEN) || l.contains("96rGlfmibIGlgcZRskXaIFfN"));
    }

    @Test
    void aSecretUnderACustomKeyNameIsRegisteredAndShownRedacted() {
        assertThat(Redactor.redact("signing with " + CUSTOM_SECRET)).isEqualTo("signing with [redacted]");
        assertThat(Settings.isSecretKey("acme.hmac-keys")).isTrue();
        assertThat(Settings.isSecretKey("ACME_HMAC_KEYS")).as("its environment variable").isTrue();
        assertThat(Settings.of(Map.of("acme.hmac-keys", CUSTOM_SECRET)).describe()).containsEntry("acme.hmac-keys", "[redacted]");
    }

    /** The log lines as the runner writes them: through its redacting layout. */
    private static List<String> rendered() {
        RedactingLayout layout = new RedactingLayout();
        layout.setContext((LoggerContext) LoggerFactory.getILoggerFactory());
        layout.setPattern("%msg%n%ex");
        layout.start();
        synchronized (logs) {
            return List.copyOf(logs.list).stream().map(layout::doLayout).toList();
        }
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
