package io.chatintake.channel.webhook;

import io.chatintake.config.Secret;
import io.chatintake.support.CrashPoint;
import io.chatintake.support.MeterRegistryLookup;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.WebServerRequest;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.SQLException;
import java.time.Clock;
import java.util.List;
import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.apache.camel.component.platform.http.vertx.HttpMessage;
import org.apache.camel.support.DefaultProducer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One delivery: size cap, handshakes, signature over the raw bytes, the events stored in one
 * transaction, and only after the commit a 2xx. Every failure on our side is a 503 so the
 * provider retries (other 4xx are dead-lettered by most providers, and lost). Request headers
 * are dropped before answering: platform-http would echo them (signature included).
 */
public final class WebhookInboxProducer extends DefaultProducer {
    private static final Logger LOG = LoggerFactory.getLogger(WebhookInboxProducer.class);
    static final String METRIC = "chat.intake.webhook.deliveries";
    /** Characters of an unsigned header value a log line shows. */
    static final int UNSIGNED_SHOWN = 64;

    private final WebhookInboxEndpoint endpoint;
    private final Clock clock = Clock.systemUTC();
    private volatile MeterRegistry meters;

    WebhookInboxProducer(WebhookInboxEndpoint endpoint) {
        super(endpoint);
        this.endpoint = endpoint;
    }

    @Override
    public void process(Exchange exchange) {
        try {
            receive(exchange, delivery(exchange.getMessage()));
        } catch (RuntimeException e) {
            // Our fault whatever it is: the provider must retry, and the answer carries no stack trace.
            LOG.error("{} webhook: a delivery failed unexpectedly ({}); nothing committed, 503 returned", endpoint.getChannel(),
                    firstLine(e.toString()));
            reply(exchange, 503, "{\"error\":\"internal_error\"}", "internal_error");
        }
    }

    private void receive(Exchange exchange, Delivery delivery) {
        if (delivery.body().length > endpoint.getMaxBodyBytes()) {
            reply(exchange, 413, "{\"error\":\"body_too_large\"}", "body_too_large");
            return;
        }
        if ("GET".equals(delivery.method())) {
            subscriptionCheck(exchange, delivery);
            return;
        }
        SignatureVerifier check = endpoint.verifier();
        if (check == null && !endpoint.acceptsUnsigned()) {
            reply(exchange, 503, "{\"error\":\"not_configured\"}", "not_configured");
            return;
        }
        String deliveryId = endpoint.getDeliveryIdHeader() == null ? null : delivery.header().apply(endpoint.getDeliveryIdHeader());
        if (check != null) {
            SignatureVerifier.Verification verification = check.verify(delivery.header(), delivery.body(), clock.instant());
            if (!verification.verified()) {
                String reason = verification.reason().code();
                LOG.warn("{} webhook: delivery {} rejected ({}); nothing stored, 401 returned", endpoint.getChannel(),
                        deliveryId == null ? "(no delivery id)" : unsigned(deliveryId), reason);
                reply(exchange, 401, "{\"error\":\"" + reason + "\"}", reason);
                return;
            }
        }
        List<WebhookEvent> events = endpoint.mapping().events(delivery.body(), delivery.contentType(), delivery.header(), deliveryId);
        if (isChallenge(events)) {
            DeliveryAnswers.Answer answer = endpoint.answers().handshake(events.get(0));
            if (answer != null) {
                answer(exchange, 200, answer.contentType(), answer.body(), "handshake");
                return;
            }
        }
        if (events.isEmpty()) {
            // Only empty event arrays: LINE's "Verify" button sends exactly that.
            reply(exchange, 200, "{\"status\":\"no_events\"}", "no_events");
            return;
        }
        List<WebhookEventSink.Stored> stored;
        try {
            stored = endpoint.sink().store(delivery, events);
        } catch (SQLException e) {
            // SQLState and the first line only: a server message's detail lines can quote the values.
            LOG.warn("{} webhook: {} event(s) not stored ({} {}); 503 returned, the provider will retry", endpoint.getChannel(),
                    events.size(), e.getSQLState(), firstLine(e.getMessage()));
            reply(exchange, 503, "{\"error\":\"storage_unavailable\"}", "storage_unavailable");
            return;
        }
        CrashPoint.reach(CrashPoint.WEBHOOK_AFTER_COMMIT);
        events.stream().filter(event -> !event.parsed()).forEach(event -> LOG.warn(EventMapping.UNMAPPED.equals(event.parseError())
                        ? "{} webhook: event {} is authentic but holds no event the mapping knows; stored whole as {} and acknowledged"
                        : "{} webhook: event {} is authentic but not a JSON object ({}); stored raw and acknowledged",
                endpoint.getChannel(), event.eventId(), event.parseError()));
        boolean anyNew = stored.stream().anyMatch(WebhookEventSink.Stored::firstDelivery);
        boolean unmapped = EventMapping.UNMAPPED.equals(events.get(0).parseError());
        String outcome = !anyNew ? "duplicate" : unmapped ? EventMapping.UNMAPPED : "stored";
        String answer = endpoint.answers().stored(events.get(0).type());
        reply(exchange, 200, answer != null ? answer : "{\"status\":\"" + outcome + "\"}", outcome);
        if (anyNew) {
            // The events are committed: the scheduler derives them now instead of at its next look.
            endpoint.eventsStored();
        }
    }

    private boolean isChallenge(List<WebhookEvent> events) {
        return endpoint.getChallengeType() != null && events.size() == 1 && endpoint.getChallengeType().equals(events.get(0).type());
    }

    /** Meta's subscription check: the challenge back only to whoever knows the verify token. */
    private void subscriptionCheck(Exchange exchange, Delivery delivery) {
        if (endpoint.getVerifyTokenKey() == null) {
            reply(exchange, 405, "{\"error\":\"method_not_allowed\"}", "method_not_allowed");
            return;
        }
        Secret expected = endpoint.verifyToken();
        if (expected == null) {
            reply(exchange, 503, "{\"error\":\"not_configured\"}", "not_configured");
            return;
        }
        String token = delivery.param().apply("hub.verify_token");
        String answer = delivery.param().apply("hub.challenge");
        if ("subscribe".equals(delivery.param().apply("hub.mode")) && token != null && answer != null
                && MessageDigest.isEqual(sha256(token), sha256(expected.reveal()))) {
            replyText(exchange, 200, answer, "handshake");
        } else {
            LOG.warn("{} webhook: subscription check refused (mode or verify token wrong); 403 returned", endpoint.getChannel());
            reply(exchange, 403, "{\"error\":\"forbidden\"}", "forbidden");
        }
    }

    /**
     * The request as received. platform-http-vertx parses a form-encoded body into a map (and
     * its fields into headers), so the raw bytes and the real headers are read from Vert.x.
     */
    private static Delivery delivery(Message in) {
        if (in instanceof HttpMessage http && http.getRequest() instanceof WebServerRequest request) {
            RoutingContext context = request.routingContext();
            var body = context.body().buffer();
            // Path, then query parameters only: a form field must not pose as either.
            return new Delivery(request.method().name(), body == null ? new byte[0] : body.getBytes(),
                    request.getHeader("Content-Type"), request::getHeader,
                    name -> context.pathParam(name) != null ? context.pathParam(name)
                            : context.queryParam(name).stream().findFirst().orElse(null));
        }
        byte[] body = in.getBody(byte[].class);
        String method = in.getHeader(Exchange.HTTP_METHOD, "POST", String.class);
        return new Delivery(method, body == null ? new byte[0] : body, in.getHeader(Exchange.CONTENT_TYPE, String.class),
                name -> in.getHeader(name, String.class), name -> in.getHeader(name, String.class));
    }

    private void reply(Exchange exchange, int status, String json, String outcome) {
        answer(exchange, status, "application/json", json, outcome);
    }

    private void replyText(Exchange exchange, int status, String text, String outcome) {
        answer(exchange, status, "text/plain; charset=utf-8", text, outcome);
    }

    private void answer(Exchange exchange, int status, String contentType, String body, String outcome) {
        Message out = exchange.getMessage();
        out.removeHeaders("*");
        out.setHeader(Exchange.HTTP_RESPONSE_CODE, status);
        out.setHeader(Exchange.CONTENT_TYPE, contentType);
        out.setBody(body);
        count(exchange, status, outcome);
    }

    private void count(Exchange exchange, int status, String outcome) {
        MeterRegistry registry = meters;
        if (registry == null) {
            // Looked up lazily: camel-micrometer binds its registry while the context starts, after endpoints exist.
            registry = MeterRegistryLookup.of(exchange.getContext());
            meters = registry;
        }
        Counter.builder(METRIC)
                .description("Webhook deliveries by answer: stored, duplicate, or why not")
                .tags("channel", endpoint.getChannel(), "workspace", endpoint.getWorkspace(), "status", Integer.toString(status),
                        "outcome", outcome)
                .register(registry)
                .increment();
    }

    private static byte[] sha256(String value) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(value.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * An unsigned header value as it may be logged: whoever reaches the port chooses it (up to the
     * server's 8 KB of headers), so it is cut and its control characters replaced.
     */
    static String unsigned(String value) {
        String printable = value.replaceAll("\\p{Cntrl}", "?");
        return printable.length() <= UNSIGNED_SHOWN ? printable
                : printable.substring(0, UNSIGNED_SHOWN) + "... (" + value.length() + " characters)";
    }

    private static String firstLine(String message) {
        if (message == null) {
            return "";
        }
        int newline = message.indexOf('\n');
        return newline < 0 ? message : message.substring(0, newline);
    }
}
