package io.chatintake.routes;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.sim.BotApiSimulator;
import io.chatintake.testkit.Sql;
import java.util.Map;
import org.apache.camel.builder.AdviceWith;
import org.apache.camel.builder.TemplatedRouteBuilder;
import org.apache.camel.component.mock.MockEndpoint;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * routes/telegram.yaml: a route made from its template for the bot main polls a Bot API server (the
 * product's simulator on loopback); the updates are committed to telegram_update and queued as
 * work:telegram-update. The runner makes one such route per bot of telegram.bots. Without the
 * runner's work dispatcher (as here), each stored update runs the route itself.
 */
class TelegramRouteTest extends RouteTestSupport {
    // Static: the configuration below is read while the test instance is being constructed.
    private static final BotApiSimulator telegram = BotApiSimulator.start();
    private static final String token = telegram.addBot(7001, "FAKE-route-test-token", "route_bot");

    @Override
    protected Map<String, String> settings() {
        return Map.of("telegram.api-url", telegram.url(), "telegram.bot-token", token, "telegram.poll-timeout-seconds", "1");
    }

    @AfterAll
    static void stopTelegram() {
        telegram.close();
    }

    @Test
    void storesPolledUpdatesAndHandsThemToTheHandler() throws Exception {
        loadRoutes("routes/telegram.yaml");
        TemplatedRouteBuilder.builder(context, "telegram-bot-intake").routeId("telegram-main").parameter("bot", "main").add();
        AdviceWith.adviceWith(context, "telegram-main", r -> r.mockEndpointsAndSkip("work:telegram-update"));
        MockEndpoint handler = getMockEndpoint("mock:work:telegram-update");
        handler.expectedHeaderReceived("TelegramText", "hello");
        handler.expectedHeaderReceived("TelegramChatId", "42");
        telegram.enqueueText(token, 42, "hello");
        context.start();

        handler.assertIsSatisfied();
        assertThat(Sql.string(db, "SELECT bot_id || ' ' || update_type FROM telegram_update")).isEqualTo("7001 message");
    }
}
