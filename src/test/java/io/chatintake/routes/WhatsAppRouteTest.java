package io.chatintake.routes;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.LogCapture;
import io.chatintake.testkit.Sql;
import java.util.Map;
import org.apache.camel.Exchange;
import org.apache.camel.builder.AdviceWith;
import org.junit.jupiter.api.Test;

/** routes/whatsapp.yaml: each message and status of a signed WhatsApp delivery is stored as work:whatsapp-event, a bad signature is 401; the handler logs the event, never its text. */
class WhatsAppRouteTest extends RouteTestSupport {
    private static final String SECRET = "whatsapproutetest_secret_1";

    @Override
    protected Map<String, String> settings() {
        return Map.of("whatsapp.app-secrets", SECRET);
    }

    @Test
    void storesASignedDeliveryRefusesABadSignatureAndItsHandlerLogsNoBody() throws Exception {
        loadRoutes("routes/whatsapp.yaml");
        AdviceWith.adviceWith(context, "whatsapp-webhook", r -> r.replaceFromWith("direct:webhook"));
        handItemsTo("whatsapp-event");
        context.start();
        String body = "{\"entry\":[{\"changes\":[{\"value\":{\"metadata\":{\"phone_number_id\":\"PN1\"},\"messages\":[{\"id\":\"wamid.1\",\"from\":\"4912345\",\"timestamp\":\"1700000000\",\"type\":\"text\",\"text\":{\"body\":\"need help\"}}],\"statuses\":[{\"id\":\"wamid.0\",\"status\":\"read\",\"timestamp\":\"1700000001\"}]}}]}]}";

        Exchange stored = postSigned("direct:webhook", "meta", SECRET, body);
        assertThat(stored.getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE)).isEqualTo(200);
        assertThat(stored.getMessage().getBody(String.class)).isEqualTo("{\"status\":\"stored\"}");
        assertThat(postSigned("direct:webhook", "meta", "guess", body).getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE)).isEqualTo(401);
        assertThat(Sql.string(db, "SELECT string_agg(event_id || ' ' || event_type, ', ' ORDER BY event_id) FROM webhook_event")).isEqualTo("wamid.0:read status.read, wamid.1 message");
        deriveStoredEvents();
        assertThat(Sql.string(db, "SELECT account_id || ' ' || conversation_id || ' ' || text FROM channel_message")).isEqualTo("PN1 4912345 need help");

        try (LogCapture log = new LogCapture()) {
            template.sendBodyAndHeaders("direct:whatsapp-event", body, Map.of("ChatIntakeWebhookEventId", "wamid.1", "ChatIntakeWebhookEventType", "message", "ChatIntakeWebhookAccount", "PN1", "ChatIntakeWebhookStoredId", 1));
            assertThat(log.lines()).anyMatch(line -> line.contains("whatsapp event wamid.1 type message for number PN1 stored (row 1)")).noneMatch(line -> line.contains("need help"));
        }
    }
}
