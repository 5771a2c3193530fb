package io.chatintake.routes;

import io.chatintake.testkit.Sql;
import java.util.Map;
import org.apache.camel.builder.AdviceWith;
import org.apache.camel.component.mock.MockEndpoint;
import org.junit.jupiter.api.Test;

/**
 * routes/OperatorAlerts.java (Java DSL): each check sends every new finding (here a parked work
 * item) to direct:operator-alert-send (a mock here), keyed by the finding.
 */
class OperatorAlertsRouteTest extends RouteTestSupport {

    @Override
    protected Map<String, String> settings() {
        return Map.of("operator-alerts.telegram-chat-id", "-100555");
    }

    @Test
    void aCheckSendsEachNewFinding() throws Exception {
        long id = Sql.count(db, "INSERT INTO work_item (kind, source_key, source_id, state, attempts, last_error)"
                + " VALUES ('telegram-update', '1:5', 5, 'parked', 8, 'handler down') RETURNING id");
        loadRoutes("routes/OperatorAlerts.java");
        AdviceWith.adviceWith(context, "operator-alerts", r -> {
            r.replaceFromWith("direct:check");
            r.mockEndpointsAndSkip("direct:operator-alert-send");
        });
        MockEndpoint send = getMockEndpoint("mock:direct:operator-alert-send");
        send.expectedMessageCount(1);
        send.message(0).header("IdempotencyKey").startsWith("work-parked:" + id + ":");
        send.message(0).body().contains("parked after 8 attempt(s): handler down");
        context.start();

        template.sendBody("direct:check", null);

        send.assertIsSatisfied();
    }
}
