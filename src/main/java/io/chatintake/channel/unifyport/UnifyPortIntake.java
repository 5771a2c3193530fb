package io.chatintake.channel.unifyport;

import io.chatintake.channel.webhook.SignatureScheme;
import io.chatintake.channel.webhook.SignatureVerifier;
import io.chatintake.channel.webhook.WebhookEventStore;

import io.chatintake.config.Secret;
import io.chatintake.message.ChildMessageListener;
import io.chatintake.config.Settings;
import io.chatintake.support.MeterRegistryLookup;
import io.chatintake.channel.webhook.SignatureVerifier.Verification;
import io.chatintake.work.WorkDispatcher;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import javax.sql.DataSource;
import org.apache.camel.CamelContext;
import org.apache.camel.CamelContextAware;
import org.apache.camel.Exchange;
import org.apache.camel.support.CamelContextHelper;
import org.apache.camel.Message;
import org.apache.camel.Processor;
import org.apache.camel.support.service.ServiceSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The processor behind {@code POST /webhooks/unifyport}: size cap, signature, then one
 * transaction (event + child message), and only after the commit a 2xx. Every failure on our
 * side is a 503 so the provider retries (any other 4xx is dead-lettered there and lost).
 * <p>
 * Configured through setters so a route file can declare one per workspace (YAML {@code beans:}
 * with {@code {{placeholders}}}); the route using it starts it.
 * <p>
 * A first delivery is stored with its work item in the same transaction; the work dispatcher
 * then runs {@code direct:unifyport-event} for it, so business work never holds up the answer
 * and a failure there is retried from storage.
 */
public final class UnifyPortIntake extends ServiceSupport implements Processor, CamelContextAware {
    private static final Logger LOG = LoggerFactory.getLogger(UnifyPortIntake.class);

    public static final String EVENT_ID_HEADER = "X-Device-Event-Id";
    public static final String DELIVERY_ID_HEADER = "X-Device-Delivery-Id";
    static final String METRIC = "chat.intake.webhook.deliveries";

    private String configPrefix = "unifyport";
    private String workspace = "default";
    private String channel = "unifyport";
    private String scheme = "unifyport";
    private List<Secret> signingSecrets = List.of();
    private boolean allowUnsigned;
    private long maxBodyBytes = 1024 * 1024;
    /** Null: the scheme's own tolerance. */
    private Long timestampToleranceSeconds;
    private long statementTimeoutMs = 5000;
    private DataSource dataSource;
    private ChildMessageListener childMessageListener;
    private CamelContext camelContext;
    private final Clock clock = Clock.systemUTC();

    private volatile SignatureVerifier verifier;
    private volatile WebhookEventStore store;
    private volatile MeterRegistry meters;

    /**
     * Validates the configuration and says once, at start, whether the webhook is on. Camel starts
     * this with the route that uses it (and again when a reload restarts that route); an
     * {@code initMethod} would run twice, since YAML beans are also built once while routes are pre-parsed.
     */
    @Override
    protected void doStart() {
        if (dataSource == null) {
            throw new IllegalStateException(configPrefix + " webhook: no dataSource set (bind it as #dataSource)");
        }
        if (childMessageListener == null && camelContext != null) {
            childMessageListener = CamelContextHelper.findSingleByType(camelContext, ChildMessageListener.class);
        }
        if (childMessageListener == null) {
            throw new IllegalStateException(configPrefix + " webhook: no ChildMessageListener bound (the application"
                    + " configuration binds 'childMessageListener'); without it albums and attachments would not be scheduled");
        }
        store = new WebhookEventStore(dataSource, Duration.ofMillis(statementTimeoutMs), UnifyPortWorkSource.KIND, childMessageListener);
        SignatureScheme parsed = SignatureScheme.parse(scheme);
        SignatureScheme chosen = timestampToleranceSeconds == null ? parsed
                : parsed.withTolerance(Duration.ofSeconds(timestampToleranceSeconds));
        String secretsVariable = Settings.envName(configPrefix + ".signing-secrets");
        if (!signingSecrets.isEmpty()) {
            verifier = new SignatureVerifier(chosen, signingSecrets);
            LOG.info("{} webhook: on for workspace {}: {} signing secret(s), scheme {}, timestamp tolerance +/-{}s, body cap {} bytes",
                    configPrefix, workspace, signingSecrets.size(), chosen.name(), chosen.tolerance().toSeconds(), maxBodyBytes);
        } else if (allowUnsigned) {
            verifier = null;
            LOG.warn("{} webhook: INSECURE: accepting UNSIGNED deliveries for workspace {} ({}=true); anyone who can reach "
                    + "this port can store events. Set {} and remove {}.", configPrefix, workspace,
                    Settings.envName(configPrefix + ".allow-unsigned"), secretsVariable, Settings.envName(configPrefix + ".allow-unsigned"));
        } else {
            verifier = null;
            LOG.warn("{} webhook: OFF for workspace {}: no signing secret configured; set {} (comma-separated) to enable it. "
                    + "Until then deliveries are answered 503 not_configured.", configPrefix, workspace, secretsVariable);
        }
    }

    /** Deliveries already handed to the store's committers finish; a restart builds a new store. */
    @Override
    protected void doStop() {
        WebhookEventStore current = store;
        if (current != null) {
            current.close();
        }
    }

    @Override
    public void process(Exchange exchange) {
        Message in = exchange.getMessage();
        try {
            receive(exchange, in);
        } catch (RuntimeException e) {
            // Our fault whatever it is: the provider must retry, and the answer carries no stack trace.
            LOG.error("{} webhook: delivery {} failed unexpectedly ({}); nothing committed, 503 returned", configPrefix,
                    deliveryId(in), firstLine(e.toString()));
            reply(exchange, 503, "{\"error\":\"internal_error\"}", "internal_error");
        }
    }

    private void receive(Exchange exchange, Message in) {
        if (!isStarted()) {
            throw new IllegalStateException(configPrefix + " webhook: not started (start() or a route using it)");
        }
        // The size cap comes first, before the body is looked at. (Vert.x has buffered it already;
        // chat-intake.http.max-body-bytes is the server-wide cap that refuses huge bodies while reading.)
        Long declared = in.getHeader(Exchange.CONTENT_LENGTH, Long.class);
        if (declared != null && declared > maxBodyBytes) {
            reply(exchange, 413, "{\"error\":\"body_too_large\"}", "body_too_large");
            return;
        }
        byte[] body = in.getBody(byte[].class);
        body = body == null ? new byte[0] : body;
        if (body.length > maxBodyBytes) {
            reply(exchange, 413, "{\"error\":\"body_too_large\"}", "body_too_large");
            return;
        }
        SignatureVerifier check = verifier;
        if (check == null && !allowUnsigned) {
            reply(exchange, 503, "{\"error\":\"not_configured\"}", "not_configured");
            return;
        }
        if (check != null) {
            Verification verification = check.verify(name -> in.getHeader(name, String.class), body, clock.instant());
            if (!verification.verified()) {
                String reason = verification.reason().code();
                LOG.warn("{} webhook: delivery {} rejected ({}); nothing stored, 401 returned", configPrefix,
                        deliveryId(in), reason);
                reply(exchange, 401, "{\"error\":\"" + reason + "\"}", reason);
                return;
            }
        }
        String headerEventId = in.getHeader(EVENT_ID_HEADER, String.class);
        UnifyPortEvent event = UnifyPortEvent.parse(body, headerEventId, in.getHeader(DELIVERY_ID_HEADER, String.class));
        if (headerEventId != null && !headerEventId.isBlank() && !headerEventId.trim().equals(event.eventId())) {
            LOG.warn("{} webhook: delivery {}: {} differs from the signed body id {}; the body id is used", configPrefix,
                    deliveryId(in), EVENT_ID_HEADER, event.eventId());
        }
        WebhookEventStore.Stored stored;
        try {
            stored = store.store(workspace, channel, event);
        } catch (SQLException e) {
            // SQLState and the first line only: a server message's detail lines can quote the values.
            LOG.warn("{} webhook: event {} not stored ({} {}); 503 returned, the provider will retry", configPrefix,
                    event.eventId(), e.getSQLState(), firstLine(e.getMessage()));
            reply(exchange, 503, "{\"error\":\"storage_unavailable\"}", "storage_unavailable");
            return;
        }
        if (!event.parsed()) {
            LOG.warn("{} webhook: event {} is authentic but not a JSON object ({}); stored raw and acknowledged",
                    configPrefix, event.eventId(), event.parseError());
        }
        String outcome = stored.firstDelivery() ? "stored" : "duplicate";
        reply(exchange, 200, "{\"status\":\"" + outcome + "\"}", outcome);
        if (stored.firstDelivery()) {
            // Its work item is committed; wake the dispatcher instead of waiting for its next look.
            WorkDispatcher.nudge(exchange.getContext());
        }
    }

    /** Request headers are dropped first: platform-http would echo them (signature included) in the response. */
    private void reply(Exchange exchange, int status, String json, String outcome) {
        Message out = exchange.getMessage();
        out.removeHeaders("*");
        out.setHeader(Exchange.HTTP_RESPONSE_CODE, status);
        out.setHeader(Exchange.CONTENT_TYPE, "application/json");
        out.setBody(json);
        count(exchange, status, outcome);
    }

    private void count(Exchange exchange, int status, String outcome) {
        MeterRegistry registry = meters;
        if (registry == null) {
            // Looked up lazily: camel-micrometer binds its registry while the context starts, after beans exist.
            registry = MeterRegistryLookup.of(exchange.getContext());
            meters = registry;
        }
        Counter.builder(METRIC)
                .description("Webhook deliveries by answer: stored, duplicate, or why not")
                .tags("channel", channel, "workspace", workspace, "status", Integer.toString(status), "outcome", outcome)
                .register(registry)
                .increment();
    }

    private static String deliveryId(Message in) {
        String id = in.getHeader(DELIVERY_ID_HEADER, String.class);
        return id == null ? "(no delivery id)" : id;
    }

    private static String firstLine(String message) {
        if (message == null) {
            return "";
        }
        int newline = message.indexOf('\n');
        return newline < 0 ? message : message.substring(0, newline);
    }

    // --- configuration (YAML beans: properties) ---

    /** Names this intake's keys in log lines: {@code <prefix>.signing-secrets} -> {@code <PREFIX>_SIGNING_SECRETS}. */
    public void setConfigPrefix(String configPrefix) {
        this.configPrefix = configPrefix;
    }

    public void setWorkspace(String workspace) {
        this.workspace = workspace;
    }

    public void setChannel(String channel) {
        this.channel = channel;
    }

    /** A {@link SignatureScheme#parse(String)} spec; {@code unifyport} by default. */
    public void setScheme(String scheme) {
        this.scheme = scheme;
    }

    /** Comma-separated; several are accepted at once while a secret is rotated. */
    public void setSigningSecrets(String secrets) {
        this.signingSecrets = secrets == null ? List.of() : Arrays.stream(secrets.split(","))
                .map(String::trim).filter(s -> !s.isEmpty()).map(Secret::of).toList();
    }

    public void setAllowUnsigned(boolean allowUnsigned) {
        this.allowUnsigned = allowUnsigned;
    }

    public void setMaxBodyBytes(long maxBodyBytes) {
        this.maxBodyBytes = maxBodyBytes;
    }

    public void setTimestampToleranceSeconds(Long timestampToleranceSeconds) {
        this.timestampToleranceSeconds = timestampToleranceSeconds;
    }

    public void setStatementTimeoutMs(long statementTimeoutMs) {
        this.statementTimeoutMs = statementTimeoutMs;
    }

    @Override
    public CamelContext getCamelContext() {
        return camelContext;
    }

    @Override
    public void setCamelContext(CamelContext camelContext) {
        this.camelContext = camelContext;
    }

    public void setChildMessageListener(ChildMessageListener childMessageListener) {
        this.childMessageListener = childMessageListener;
    }

    public void setDataSource(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    @Override
    public String toString() {
        return "UnifyPortIntake[" + configPrefix + ", workspace " + workspace + "]";
    }
}
