package io.chatintake.routes;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.Sql;
import java.util.Map;
import org.apache.camel.Exchange;
import org.apache.camel.builder.AdviceWith;
import org.junit.jupiter.api.Test;

/** routes/telegram-webhook.yaml: an update pushed with the secret token is stored as a polled one, with its work; a wrong token is 401. */
class TelegramWebhookRouteTest extends RouteTestSupport {
    private static final String SECRET = "tg_route_secret_1";

    @Override
    protected Map<String, String> settings() {
        return Map.of("telegram.webhook-secret", SECRET);
    }

    @Test
    void storesAnUpdateWithTheSecretToken() throws Exception {
        Sql.execute(db, "INSERT INTO telegram_checkpoint (bot_id, bot_name) VALUES (707, 'main')");
        loadRoutes("routes/telegram-webhook.yaml");
        // platform-http's {bot} path parameter reaches the route as a header.
        AdviceWith.adviceWith(context, "telegram-webhook", r -> {
            r.replaceFromWith("direct:webhook");
            r.weaveAddFirst().setHeader("bot", r.constant("main"));
        });
        context.start();
        String update = "{\"update_id\":9001,\"message\":{\"message_id\":5,\"date\":1749416383,\"chat\":{\"id\":-100123,\"type\":\"group\"},"
                + "\"text\":\"hi\"}}";

        assertThat(postSigned("direct:webhook", "telegram-secret-token", SECRET, update).getMessage().getBody(String.class))
                .isEqualTo("{\"status\":\"stored\"}");
        assertThat(postSigned("direct:webhook", "telegram-secret-token", "guess", update).getMessage()
                .getHeader(Exchange.HTTP_RESPONSE_CODE)).isEqualTo(401);

        assertThat(Sql.string(db, "SELECT bot_id || ' ' || update_id || ' ' || update_type FROM telegram_update")).isEqualTo("707 9001 message");
        assertThat(Sql.string(db, "SELECT kind || ' ' || source_key FROM work_item")).isEqualTo("telegram-update 707:9001");
    }
}
