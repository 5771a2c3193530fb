package io.chatintake.channel.webhook;

import java.util.Map;
import org.apache.camel.Endpoint;
import org.apache.camel.spi.annotations.Component;
import org.apache.camel.support.HealthCheckComponent;

/**
 * {@code webhook-inbox:<channel>}: a signed-webhook intake configured entirely in a route,
 * placed after the {@code platform-http} consumer of the channel's path:
 * <pre>
 * - route:
 *     from:
 *       uri: "platform-http:/webhooks/slack?httpMethodRestrict=POST&amp;muteException=true"
 *       steps:
 *         - to:
 *             uri: "webhook-inbox:slack"
 *             parameters: { scheme: slack, secretsKey: slack.signing-secrets, eventId: /event_id, ... }
 * </pre>
 * Size cap, signature over the raw bytes, one transaction storing the delivery's events (child
 * messages, albums, attachments, work items), then the answer. The event mapping options are
 * {@link WebhookInboxMapping}'s; the others are {@link WebhookInboxEndpoint}'s. Each channel's
 * health check (on, off, unsigned) is shown unless healthCheckProducerEnabled=false.
 */
@Component("webhook-inbox")
public class WebhookInboxComponent extends HealthCheckComponent {

    @Override
    protected Endpoint createEndpoint(String uri, String remaining, Map<String, Object> parameters) throws Exception {
        if (remaining == null || remaining.isBlank()) {
            throw new IllegalArgumentException("webhook-inbox needs a channel name: webhook-inbox:slack");
        }
        WebhookInboxEndpoint endpoint = new WebhookInboxEndpoint(uri, this, remaining);
        setProperties(endpoint, parameters);
        endpoint.compileMapping();
        return endpoint;
    }
}
