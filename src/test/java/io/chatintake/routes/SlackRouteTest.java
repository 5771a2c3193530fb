package io.chatintake.routes;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.LogCapture;
import io.chatintake.testkit.Sql;
import java.util.Map;
import org.apache.camel.Exchange;
import org.apache.camel.builder.AdviceWith;
import org.junit.jupiter.api.Test;

/** routes/slack.yaml: a signed Slack event is stored as work:slack-event, a bad signature is 401; the handler logs the event, never its text. */
class SlackRouteTest extends RouteTestSupport {
    private static final String SECRET = "slackroutetest_secret_1";

    @Override
    protected Map<String, String> settings() {
        return Map.of("slack.signing-secrets", SECRET);
    }

    @Test
    void storesASignedDeliveryRefusesABadSignatureAndItsHandlerLogsNoBody() throws Exception {
        loadRoutes("routes/slack.yaml");
        AdviceWith.adviceWith(context, "slack-webhook", r -> r.replaceFromWith("direct:webhook"));
        handItemsTo("slack-event");
        context.start();
        String body = "{\"team_id\":\"T1\",\"event_id\":\"Ev1\",\"event_time\":1700000000,\"event\":{\"type\":\"message\",\"channel\":\"C1\",\"ts\":\"1700000000.000100\",\"text\":\"quarterly numbers\"}}";

        Exchange stored = postSigned("direct:webhook", "slack", SECRET, body);
        assertThat(stored.getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE)).isEqualTo(200);
        assertThat(stored.getMessage().getBody(String.class)).isEqualTo("{\"status\":\"stored\"}");
        assertThat(postSigned("direct:webhook", "slack", "guess", body).getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE)).isEqualTo(401);
        assertThat(Sql.string(db, "SELECT string_agg(event_id || ' ' || event_type, ', ' ORDER BY event_id) FROM webhook_event")).isEqualTo("Ev1 message");
        deriveStoredEvents();
        assertThat(Sql.string(db, "SELECT conversation_id || ' ' || text FROM channel_message")).isEqualTo("C1 quarterly numbers");

        try (LogCapture log = new LogCapture()) {
            template.sendBodyAndHeaders("direct:slack-event", body, Map.of("ChatIntakeWebhookEventId", "Ev1", "ChatIntakeWebhookEventType", "message", "ChatIntakeWebhookAccount", "T1", "ChatIntakeWebhookStoredId", 1));
            assertThat(log.lines()).anyMatch(line -> line.contains("slack event Ev1 type message team T1 stored (row 1)")).noneMatch(line -> line.contains("quarterly numbers"));
        }
    }
}
