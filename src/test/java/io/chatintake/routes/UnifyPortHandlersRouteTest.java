package io.chatintake.routes;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.LogCapture;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** routes/unifyport-handlers.yaml: a stored UnifyPort event is logged by its headers, never by its body. */
class UnifyPortHandlersRouteTest extends RouteTestSupport {

    @Test
    void logsTheEventWithoutItsBody() throws Exception {
        loadRoutes("routes/unifyport-handlers.yaml");
        handItemsTo("unifyport-event");
        context.start();

        try (LogCapture log = new LogCapture()) {
            template.sendBodyAndHeaders("direct:unifyport-event", "{\"data\":{\"message\":{\"text\":\"card 4111\"}}}", Map.of(
                    "ChatIntakeWebhookEventId", "evt_9", "ChatIntakeWebhookEventType", "message.received", "ChatIntakeWebhookProvider", "whatsapp",
                    "ChatIntakeWebhookWorkspace", "default", "ChatIntakeWebhookStoredId", 12, "ChatIntakeWorkItemId", 34));
            assertThat(log.lines())
                    .anyMatch(line -> line.equals("unifyport event evt_9 type message.received provider whatsapp workspace default"
                            + " stored (row 12), work item 34"))
                    .noneMatch(line -> line.contains("card 4111"));
        }
    }
}
