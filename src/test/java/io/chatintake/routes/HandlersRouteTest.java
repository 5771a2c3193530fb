package io.chatintake.routes;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Settings;
import io.chatintake.testkit.LogCapture;
import io.chatintake.testkit.Sql;
import io.chatintake.work.EffectGuard;
import io.chatintake.work.GuardedEffect;
import java.util.Map;
import org.apache.camel.builder.AdviceWith;
import org.apache.camel.component.mock.MockEndpoint;
import org.apache.camel.spi.Registry;
import org.junit.jupiter.api.Test;

/**
 * routes/handlers.yaml: with echo replies on, a text message is answered once through
 * telegram-bot (a mock here), guarded by the guardedEffect policy; other updates send nothing; album
 * decisions are logged.
 */
class HandlersRouteTest extends RouteTestSupport {

    @Override
    protected Map<String, String> settings() {
        return Map.of("telegram.echo-replies", "true");
    }

    @Override
    protected void bindBeans(Registry registry, Settings settings) {
        registry.bind(GuardedEffect.BEAN, new GuardedEffect(new EffectGuard(db)));
    }

    @Test
    void aTextMessageIsEchoedOnceThroughTelegramBot() throws Exception {
        loadRoutes("routes/handlers.yaml");
        handItemsTo("telegram-update");
        AdviceWith.adviceWith(context, "telegram-echo-reply", r -> r.mockEndpointsAndSkip("telegram-bot:*"));
        MockEndpoint bot = getMockEndpoint("mock:telegram-bot:main");
        bot.whenAnyExchangeReceived(exchange -> exchange.getMessage().setBody(501)); // the Bot API's message id
        bot.expectedBodiesReceived("Received: hello");
        bot.expectedHeaderReceived("ChatIntakeTelegramChatId", 42);
        context.start();

        Map<String, Object> update = Map.of("ChatIntakeTelegramUpdateType", "message", "ChatIntakeTelegramText", "hello", "ChatIntakeTelegramChatId", 42,
                "ChatIntakeTelegramUpdateId", 9001, "ChatIntakeWorkIdempotencyKey", "7001:9001");
        template.sendBodyAndHeaders("direct:telegram-update", "{}", update);
        template.sendBodyAndHeaders("direct:telegram-update", "{}", update);
        template.sendBodyAndHeaders("direct:telegram-update", "{}", Map.of("ChatIntakeTelegramUpdateType", "edited_message",
                "ChatIntakeTelegramText", "hello again", "ChatIntakeTelegramChatId", 42, "ChatIntakeWorkIdempotencyKey", "7001:9002"));

        bot.assertIsSatisfied();
        assertThat(Sql.string(db, "SELECT effect_key || ' ' || state || ' ' || result FROM outbound_effect"))
                .isEqualTo("7001:9001:echo-reply done 501");
    }

    @Test
    void anAlbumDecisionIsLogged() throws Exception {
        loadRoutes("routes/handlers.yaml");
        handItemsTo("album-decision");
        context.start();

        try (LogCapture log = new LogCapture()) {
            template.sendBodyAndHeaders("direct:album-decision", "{}", Map.of("ChatIntakeAlbumKey", "k1", "ChatIntakeAlbumDecisionVersion", 1,
                    "ChatIntakeAlbumDecisionKind", "complete", "ChatIntakeAlbumChildCount", 3));
            assertThat(log.lines()).contains("album k1 version 1: complete with 3 child(ren)");
        }
    }
}
