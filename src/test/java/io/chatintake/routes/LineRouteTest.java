package io.chatintake.routes;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.LogCapture;
import io.chatintake.testkit.Sql;
import java.util.Map;
import org.apache.camel.Exchange;
import org.apache.camel.builder.AdviceWith;
import org.junit.jupiter.api.Test;

/** routes/line.yaml: each event of a signed LINE delivery is stored as work:line-event, a bad signature is 401; the handler logs the event, never its reply token. */
class LineRouteTest extends RouteTestSupport {
    private static final String SECRET = "lineroutetest_secret_1";

    @Override
    protected Map<String, String> settings() {
        return Map.of("line.channel-secrets", SECRET);
    }

    @Test
    void storesASignedDeliveryRefusesABadSignatureAndItsHandlerLogsNoBody() throws Exception {
        loadRoutes("routes/line.yaml");
        AdviceWith.adviceWith(context, "line-webhook", r -> r.replaceFromWith("direct:webhook"));
        handItemsTo("line-event");
        context.start();
        String body = "{\"destination\":\"U-bot\",\"events\":[{\"type\":\"message\",\"webhookEventId\":\"01HL1\",\"timestamp\":1700000000000,\"replyToken\":\"reply-token-1\",\"source\":{\"type\":\"user\",\"userId\":\"U1\"},\"message\":{\"id\":\"m1\",\"type\":\"text\",\"text\":\"hi\"}}]}";

        Exchange stored = postSigned("direct:webhook", "line", SECRET, body);
        assertThat(stored.getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE)).isEqualTo(200);
        assertThat(stored.getMessage().getBody(String.class)).isEqualTo("{\"status\":\"stored\"}");
        assertThat(postSigned("direct:webhook", "line", "guess", body).getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE)).isEqualTo(401);
        assertThat(Sql.string(db, "SELECT string_agg(event_id || ' ' || event_type, ', ' ORDER BY event_id) FROM webhook_event")).isEqualTo("01HL1 message");
        deriveStoredEvents();
        assertThat(Sql.string(db, "SELECT account_id || ' ' || conversation_id || ' ' || text FROM channel_message")).isEqualTo("U-bot U1 hi");

        try (LogCapture log = new LogCapture()) {
            template.sendBodyAndHeaders("direct:line-event", body, Map.of("ChatIntakeWebhookEventId", "01HL1", "ChatIntakeWebhookEventType", "message", "ChatIntakeWebhookAccount", "U-bot", "ChatIntakeWebhookStoredId", 1));
            assertThat(log.lines()).anyMatch(line -> line.contains("line event 01HL1 type message for U-bot stored (row 1)")).noneMatch(line -> line.contains("reply-token-1"));
        }
    }
}
