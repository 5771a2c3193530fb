package io.chatintake.routes;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Settings;
import io.chatintake.testkit.Sql;
import io.chatintake.work.EffectGuard;
import io.chatintake.work.GuardedEffect;
import java.util.Map;
import org.apache.camel.builder.AdviceWith;
import org.apache.camel.component.mock.MockEndpoint;
import org.apache.camel.spi.Registry;
import org.junit.jupiter.api.Test;

/** routes/operator-alerts.yaml: an alert goes to the operator chat through telegram-bot (a mock here), once per finding. */
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
        bot.expectedHeaderReceived("TelegramChatId", "-100555");
        context.start();

        template.sendBodyAndHeader("direct:operator-alert-send", "work item 5 parked", "IdempotencyKey", "work-parked:5:1");
        template.sendBodyAndHeader("direct:operator-alert-send", "work item 5 parked", "IdempotencyKey", "work-parked:5:1");

        bot.assertIsSatisfied();
        assertThat(Sql.string(db, "SELECT effect_key || ' ' || state FROM outbound_effect")).isEqualTo("work-parked:5:1:operator-alert done");
    }
}
