package io.chatintake.channel.webhook;

import io.chatintake.config.Secret;
import io.chatintake.config.Settings;
import io.chatintake.message.ChildMessageListener;
import io.chatintake.support.Redactor;
import io.chatintake.work.WorkDispatcher;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;
import org.apache.camel.Category;
import org.apache.camel.Consumer;
import org.apache.camel.Processor;
import org.apache.camel.Producer;
import org.apache.camel.spi.Metadata;
import org.apache.camel.spi.UriEndpoint;
import org.apache.camel.spi.UriParam;
import org.apache.camel.spi.UriPath;
import org.apache.camel.support.CamelContextHelper;
import org.apache.camel.support.DefaultEndpoint;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One channel's intake. Secrets are read from the configuration key named by {@code secretsKey}
 * (never from the URI), when the route starts: without one the channel is off, says so once,
 * and answers 503 {@code not_configured}.
 */
@UriEndpoint(firstVersion = "0.1.0", scheme = "webhook-inbox", title = "Webhook Inbox",
        syntax = "webhook-inbox:channel", producerOnly = true, category = {Category.CHAT},
        headersClass = WebhookInboxConstants.class)
public class WebhookInboxEndpoint extends DefaultEndpoint {
    private static final Logger LOG = LoggerFactory.getLogger(WebhookInboxEndpoint.class);
    private WebhookIntakeHealthCheck health;

    @UriPath(description = "Channel name: webhook_event.channel, the work kind CHANNEL-event, metrics and logs")
    @Metadata(required = true)
    private final String channel;
    @UriParam
    private WebhookInboxMapping mappingOptions = new WebhookInboxMapping();
    private EventMapping mapping;
    @UriParam(defaultValue = "default", description = "Workspace that scopes every stored key")
    private String workspace = "default";
    @UriParam(description = "Signature scheme spec: a preset (unifyport, slack, line, meta, github, standard-webhooks, "
            + "stripe-style, telegram-secret-token, ed25519, ecdsa-p256-sha256) or custom, with ;key=value overrides")
    @Metadata(required = true)
    private String scheme;
    @UriParam(description = "Configuration key holding the signing secrets, comma-separated (rotation); default CHANNEL.signing-secrets. "
            + "For a public-key scheme (ed25519, ecdsa-p256-sha256) it holds the sender's public keys")
    private String secretsKey;
    @UriParam(description = "Accept unsigned deliveries when no secret is set (insecure; local trials only)")
    private boolean allowUnsigned;
    @UriParam(description = "Accepted timestamp skew in seconds, both ways; default the scheme's (300)")
    private Long toleranceSeconds;
    @UriParam(defaultValue = "1048576", description = "Larger bodies are answered 413 before anything else")
    private long maxBodyBytes = 1024 * 1024;
    @UriParam(defaultValue = "5000", description = "Longest a store statement runs before the delivery is answered 503")
    private long statementTimeoutMillis = 5000;
    @Deprecated
    @UriParam(label = "advanced", description = "The earlier name of statementTimeoutMillis, still accepted")
    @Metadata(deprecationNote = "use statementTimeoutMillis")
    private Long statementTimeoutMs;
    @UriParam(description = "The kind of work each stored event is queued as (stored with the event, scheduled right after its"
            + " commit); its handler is the route from work:KIND. Default CHANNEL-event")
    private String workKind;
    @UriParam(description = "Request header naming the delivery attempt (logs, webhook_event.last_delivery_id)")
    private String deliveryIdHeader;
    @UriParam(description = "Event type of a signed handshake answered with its challenge, not stored (Slack: url_verification)")
    private String challengeType;
    @UriParam(defaultValue = "/challenge", description = "Where that handshake's challenge is (a field spec), "
            + "or a JSON object answered as it is (Discord's PING: {\"type\":1})")
    private String challenge = "/challenge";
    @UriParam(description = "JSON object: event type -> the JSON answered (200) once a delivery of that type is stored, "
            + "\"*\" for any other type; default {\"status\":\"stored\"} or {\"status\":\"duplicate\"} (Discord: {\"*\":{\"type\":5}})")
    private String answers;
    @UriParam(description = "Configuration key of a verify token: GET ?hub.mode=subscribe&hub.verify_token=..&hub.challenge=.. "
            + "is answered with the challenge when the token matches, 403 otherwise (Meta)")
    private String verifyTokenKey;
    @UriParam(description = "Comma-separated JSON Pointers of an event's secret values (Discord: /token): "
            + "masked in every log line and stored error text while its handler runs")
    private String secretFields;
    @UriParam(description = "Where events are stored (a WebhookEventSink bean); default the webhook_event table")
    private WebhookEventSink eventSink;

    private volatile SignatureVerifier verifier;
    private volatile DeliveryAnswers deliveryAnswers;
    private volatile boolean acceptsUnsigned;
    private volatile Secret verifyToken;
    private volatile WebhookEventSink sink;
    private volatile WorkDispatcher dispatcher;

    public WebhookInboxEndpoint(String uri, WebhookInboxComponent component, String channel) {
        super(uri, component);
        this.channel = channel;
    }

    /** The mapping options as set, checked now: a field spec that does not parse fails the route, not a delivery. */
    void compileMapping() {
        mapping = new EventMapping(mappingOptions.options());
    }

    @Override
    public Producer createProducer() {
        return new WebhookInboxProducer(this);
    }

    @Override
    public Consumer createConsumer(Processor processor) {
        throw new UnsupportedOperationException("webhook-inbox is used with to: after a platform-http consumer");
    }

    /**
     * Reads the secrets and says once whether the channel is on; registers the channel's work
     * kind so the dispatcher runs its handler. Runs when the route starts (again on reload).
     */
    @Override
    protected void doStart() throws Exception {
        super.doStart();
        if (scheme == null || scheme.isBlank()) {
            throw new IllegalArgumentException(channel + " webhook: the scheme option is required (e.g. scheme=slack)");
        }
        SignatureScheme parsed = SignatureScheme.parse(scheme);
        SignatureScheme chosen = toleranceSeconds == null ? parsed : parsed.withTolerance(Duration.ofSeconds(toleranceSeconds));
        deliveryAnswers = DeliveryAnswers.parse(challenge, answers);
        List<Secret> secrets = secrets(getSecretsKey(), chosen.algorithm().publicKey());
        String variable = Settings.envName(getSecretsKey());
        String keys = chosen.algorithm().publicKey() ? "public key(s)" : "signing secret(s)";
        String state;
        verifier = null;
        acceptsUnsigned = false;
        if (!secrets.isEmpty()) {
            try {
                verifier = new SignatureVerifier(chosen, secrets);
                state = "on: " + secrets.size() + " " + keys + ", workspace " + workspace;
                LOG.info("{} webhook: on for workspace {}: {} {}, scheme {}, timestamp tolerance +/-{}s, body cap {} bytes",
                        channel, workspace, secrets.size(), keys, chosen.name(), chosen.tolerance().toSeconds(), maxBodyBytes);
            } catch (IllegalArgumentException e) {
                // The message names the key by position, never its value.
                state = "off: " + variable + " does not parse; deliveries are answered 503";
                LOG.error("{} webhook: OFF for workspace {}: {} in {}; fix it and restart. Until then deliveries are answered "
                        + "503 not_configured and nothing is stored.", channel, workspace, e.getMessage(), variable);
            }
        } else if (allowUnsigned) {
            state = "on: UNSIGNED deliveries accepted (insecure), workspace " + workspace;
            acceptsUnsigned = true;
            LOG.warn("{} webhook: INSECURE: accepting UNSIGNED deliveries for workspace {}; anyone who can reach this port "
                    + "can store events. Set {} and turn allow-unsigned off.", channel, workspace, variable);
        } else {
            String missing = chosen.algorithm().publicKey() ? "public key" : "signing secret";
            state = "off: no " + missing + " configured (" + variable + "); deliveries are answered 503";
            LOG.warn("{} webhook: OFF for workspace {}: no {} configured; set {} (comma-separated) to enable it. "
                    + "Until then deliveries are answered 503 not_configured.", channel, workspace, missing, variable);
        }
        if (verifyTokenKey != null) {
            verifyToken = secrets(verifyTokenKey, false).stream().findFirst().orElse(null);
            if (verifyToken == null) {
                LOG.warn("{} webhook: subscription check (GET) OFF: set {}; until then it is answered 503 not_configured",
                        channel, Settings.envName(verifyTokenKey));
            }
        }
        health = new WebhookIntakeHealthCheck(channel, state);
        if (((WebhookInboxComponent) getComponent()).isHealthCheckProducerEnabled()) {
            health.register(getCamelContext());
        }
        // Bound before any route starts when the runner's configuration is in use; absent when the component is used alone.
        dispatcher = WorkDispatcher.of(getCamelContext());
        sink = eventSink != null ? eventSink : new WebhookEventStore(dataSource(), Duration.ofMillis(statementTimeoutMillis),
                workspace, channel, getWorkKind(), this::intakeBehind);
        if (eventSink == null) {
            if (CamelContextHelper.findSingleByType(getCamelContext(), WebhookEventDeriver.class) == null) {
                // The application binds one for every process; the component used on its own (without it) still derives.
                getCamelContext().getRegistry().bind("webhookEventDeriver", new WebhookEventDeriver(dataSource(), childMessageListener()));
            }
            // The dispatcher finds every WorkSource in the registry: this channel's events reach its handler.
            getCamelContext().getRegistry().bind("workSource:" + getWorkKind(), new WebhookWorkSource(getWorkKind(),
                    secretFields == null ? List.of() : Arrays.stream(secretFields.split(",")).map(String::trim).filter(f -> !f.isEmpty()).toList()));
        }
    }

    @Override
    protected void doStop() throws Exception {
        if (health != null) {
            health.unregister(getCamelContext());
            health = null;
        }
        super.doStop();
    }

    /** A configuration key's comma-separated values: the Camel properties (configuration file), else its environment variable. */
    /**
     * The values of a key named by this route: secrets whatever the key is called, so they are
     * registered with the log redactor here (again when the route restarts on a reload), unless
     * they are public keys.
     */
    private List<Secret> secrets(String key, boolean publicKeys) {
        Optional<String> value = getCamelContext().getPropertiesComponent().resolveProperty(key);
        String raw = value.orElseGet(() -> System.getenv(Settings.envName(key)));
        List<String> values = raw == null ? List.of() : Arrays.stream(raw.split(",")).map(String::trim).filter(s -> !s.isEmpty()).toList();
        if (!publicKeys) {
            Settings.declareSecretKey(key);
            Redactor.register(values);
        }
        return values.stream().map(Secret::of).toList();
    }

    private DataSource dataSource() {
        DataSource dataSource = CamelContextHelper.lookup(getCamelContext(), "dataSource", DataSource.class);
        if (dataSource == null) {
            throw new IllegalStateException(channel + " webhook: no DataSource bound as 'dataSource'");
        }
        return dataSource;
    }

    private ChildMessageListener childMessageListener() {
        ChildMessageListener listener = CamelContextHelper.findSingleByType(getCamelContext(), ChildMessageListener.class);
        if (listener == null) {
            throw new IllegalStateException(channel + " webhook: no ChildMessageListener bound (the application configuration"
                    + " binds 'childMessageListener'); without it albums and attachments would not be scheduled");
        }
        return listener;
    }

    SignatureVerifier verifier() {
        return verifier;
    }

    /** allowUnsigned and no secret configured: a secret that does not parse keeps the channel off. */
    boolean acceptsUnsigned() {
        return acceptsUnsigned;
    }

    DeliveryAnswers answers() {
        return deliveryAnswers;
    }

    Secret verifyToken() {
        return verifyToken;
    }

    WebhookEventSink sink() {
        return sink;
    }

    /** New events were committed: the dispatcher's scheduler derives them (children, work items) now. */
    void eventsStored() {
        if (dispatcher != null) {
            dispatcher.staged();
        }
    }

    /** Deliveries queue for a transaction: the dispatcher holds handlers back until intake caught up. */
    private void intakeBehind() {
        if (dispatcher != null) {
            dispatcher.intakeBehind();
        }
    }

    EventMapping mapping() {
        return mapping;
    }

    public String getChannel() {
        return channel;
    }

    public String getWorkKind() {
        return workKind != null ? workKind : WebhookWorkSource.kindOf(channel);
    }

    public void setWorkKind(String workKind) {
        this.workKind = workKind;
    }

    public String getSecretsKey() {
        return secretsKey != null ? secretsKey : channel + ".signing-secrets";
    }

    public void setSecretsKey(String secretsKey) {
        this.secretsKey = secretsKey;
    }

    public String getWorkspace() {
        return workspace;
    }

    public void setWorkspace(String workspace) {
        this.workspace = workspace;
    }

    public String getScheme() {
        return scheme;
    }

    public void setScheme(String scheme) {
        this.scheme = scheme;
    }

    public boolean isAllowUnsigned() {
        return allowUnsigned;
    }

    public void setAllowUnsigned(boolean allowUnsigned) {
        this.allowUnsigned = allowUnsigned;
    }

    public Long getToleranceSeconds() {
        return toleranceSeconds;
    }

    public void setToleranceSeconds(Long toleranceSeconds) {
        this.toleranceSeconds = toleranceSeconds;
    }

    public long getMaxBodyBytes() {
        return maxBodyBytes;
    }

    public void setMaxBodyBytes(long maxBodyBytes) {
        this.maxBodyBytes = maxBodyBytes;
    }

    public long getStatementTimeoutMillis() {
        return statementTimeoutMillis;
    }

    public void setStatementTimeoutMillis(long statementTimeoutMillis) {
        this.statementTimeoutMillis = statementTimeoutMillis;
    }

    @Deprecated
    public Long getStatementTimeoutMs() {
        return statementTimeoutMs;
    }

    @Deprecated
    public void setStatementTimeoutMs(Long statementTimeoutMs) {
        this.statementTimeoutMs = statementTimeoutMs;
        this.statementTimeoutMillis = statementTimeoutMs;
    }

    public String getDeliveryIdHeader() {
        return deliveryIdHeader;
    }

    public void setDeliveryIdHeader(String deliveryIdHeader) {
        this.deliveryIdHeader = deliveryIdHeader;
    }

    public String getChallengeType() {
        return challengeType;
    }

    public void setChallengeType(String challengeType) {
        this.challengeType = challengeType;
    }

    public String getChallenge() {
        return challenge;
    }

    public void setChallenge(String challenge) {
        this.challenge = challenge;
    }

    public String getAnswers() {
        return answers;
    }

    public void setAnswers(String answers) {
        this.answers = answers;
    }

    public String getSecretFields() {
        return secretFields;
    }

    public void setSecretFields(String secretFields) {
        this.secretFields = secretFields;
    }

    public String getVerifyTokenKey() {
        return verifyTokenKey;
    }

    public void setVerifyTokenKey(String verifyTokenKey) {
        this.verifyTokenKey = verifyTokenKey;
    }

    public WebhookInboxMapping getMappingOptions() {
        return mappingOptions;
    }

    public void setMappingOptions(WebhookInboxMapping mappingOptions) {
        this.mappingOptions = mappingOptions;
    }

    public WebhookEventSink getEventSink() {
        return eventSink;
    }

    public void setEventSink(WebhookEventSink eventSink) {
        this.eventSink = eventSink;
    }
}
