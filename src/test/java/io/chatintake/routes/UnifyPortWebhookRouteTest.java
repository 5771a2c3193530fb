package io.chatintake.routes;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.testkit.Sql;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import org.apache.camel.Exchange;
import org.apache.camel.builder.AdviceWith;
import org.junit.jupiter.api.Test;

/** routes/unifyport-webhook.yaml: a signed UnifyPort event is stored once with its message and work; a replay is a duplicate. */
class UnifyPortWebhookRouteTest extends RouteTestSupport {
    private static final String SECRET = "unifyport_route_secret_1";

    @Override
    protected Map<String, String> settings() {
        return Map.of("unifyport.signing-secrets", SECRET);
    }

    @Test
    void storesASignedEventOnceWithItsMessage() throws Exception {
        loadRoutes("routes/unifyport-webhook.yaml");
        AdviceWith.adviceWith(context, "unifyport-webhook", r -> r.replaceFromWith("direct:webhook"));
        context.start();
        String body = new String(SignedDeliverySender.envelope("evt_1", "message.received", "whatsapp", "acc_1", Instant.now(),
                "{\"conversation\":{\"id\":\"conv_1\"},\"message\":{\"id\":\"msg_1\",\"type\":\"text\",\"text\":\"hello\"}}"),
                StandardCharsets.UTF_8);

        assertThat(postSigned("direct:webhook", "unifyport", SECRET, body).getMessage().getBody(String.class)).isEqualTo("{\"status\":\"stored\"}");
        assertThat(postSigned("direct:webhook", "unifyport", SECRET, body).getMessage().getBody(String.class)).isEqualTo("{\"status\":\"duplicate\"}");
        Exchange forged = postSigned("direct:webhook", "unifyport", "guess", body);
        assertThat(forged.getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE)).isEqualTo(401);

        assertThat(Sql.string(db, "SELECT workspace || ' ' || event_id || ' ' || event_type || ' ' || delivery_count FROM webhook_event"))
                .isEqualTo("default evt_1 message.received 2");
        deriveStoredEvents();
        assertThat(Sql.string(db, "SELECT provider || ' ' || conversation_id || ' ' || message_id || ' ' || text FROM channel_message"))
                .isEqualTo("whatsapp conv_1 msg_1 hello");
    }
}
