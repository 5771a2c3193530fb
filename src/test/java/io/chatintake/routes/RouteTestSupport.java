package io.chatintake.routes;

import io.chatintake.album.QuietPeriods;
import io.chatintake.channel.ChildMessages;
import io.chatintake.channel.webhook.SignatureScheme;
import io.chatintake.channel.webhook.WebhookEventDeriver;
import io.chatintake.channel.webhook.DerivingEventStore;
import io.chatintake.config.Secret;
import io.chatintake.config.Settings;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.testkit.RouteFile;
import io.chatintake.testkit.TestDatabase;
import java.io.IOException;
import java.io.Reader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import javax.sql.DataSource;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.builder.AdviceWith;
import org.apache.camel.model.Model;
import org.apache.camel.spi.Registry;
import org.apache.camel.support.PluginHelper;
import org.apache.camel.test.junit5.CamelContextConfiguration;
import org.apache.camel.test.junit5.CamelTestSupport;
import org.apache.camel.test.junit5.TestExecutionConfiguration;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * What the route file tests beside it share, with Camel's test kit: a context reading the shipped
 * {@code config/application.properties} (a test's own keys on top), the product's database bound
 * as {@code dataSource} (emptied before each test) with the listener channels store messages through, and {@link #loadRoutes} loading a route file
 * through its DSL as the runner does. The context starts when the test says so, after it advised
 * the routes ({@code AdviceWith}): outbound endpoints become mocks before anything runs.
 */
@ExtendWith(TestDatabase.class)
public abstract class RouteTestSupport extends CamelTestSupport {
    private static final Path CONFIG = Path.of("config/application.properties");

    protected final DataSource db = TestDatabase.dataSource();

    /** The configuration keys this test sets over {@code config/application.properties}. */
    protected Map<String, String> settings() {
        return Map.of();
    }

    /**
     * The beans the route file calls beyond {@code dataSource} and {@code childMessageListener}
     * (every channel stores messages through it): real product beans, as the runner binds them.
     */
    protected void bindBeans(Registry registry, Settings settings) {
    }

    /** Loads a route file (YAML or Java DSL) into the context, not started yet. */
    protected final void loadRoutes(String file) throws Exception {
        PluginHelper.getRoutesLoader(context).loadRoutes(PluginHelper.getResourceLoader(context).resolveResource("file:" + file));
    }

    /**
     * Replaces the input of a handler route, {@code from: "work:<kind>"}, with {@code direct:<kind>}:
     * the test hands it items as the work dispatcher would (with the work headers and those of the
     * kind), and a failure comes back to the sender as it would to the dispatcher.
     */
    protected final void handItemsTo(String routeId) throws Exception {
        String from = context.getCamelContextExtension().getContextPlugin(Model.class).getRouteDefinition(routeId).getInput().getEndpointUri();
        if (!from.startsWith("work:")) {
            throw new IllegalArgumentException("route " + routeId + " is not a handler route (from work:<kind>): " + from);
        }
        AdviceWith.adviceWith(context, routeId, r -> r.replaceFromWith("direct:" + from.substring("work:".length())));
    }

    /**
     * A POST of {@code json} to {@code uri} (the webhook route's {@code from}, replaced by a
     * {@code direct:} endpoint), signed with {@code secret} as a sender of {@code scheme} signs it
     * now; the answer's status is the {@code CamelHttpResponseCode} header.
     */
    protected final Exchange postSigned(String uri, String scheme, String secret, String json) {
        byte[] body = json.getBytes(StandardCharsets.UTF_8);
        Map<String, Object> headers = new HashMap<>(new SignedDeliverySender(URI.create(uri), Secret.of(secret),
                SignatureScheme.parse(scheme)).signatureHeaders(body, Instant.now()));
        headers.put(Exchange.HTTP_METHOD, "POST");
        headers.put(Exchange.CONTENT_TYPE, "application/json");
        return template.request(uri, exchange -> {
            exchange.getMessage().setHeaders(headers);
            exchange.getMessage().setBody(body);
        });
    }

    /**
     * Stores a UnifyPort {@code message.received} event whose {@code data} is {@code dataJson}, as
     * the shipped UnifyPort route would (its message, album and attachments), for routes that work
     * on stored messages; albums get {@code quietPeriod} until their deadline.
     */
    /**
     * Derives the events stored so far (children, work items) with the deriver the webhook-inbox
     * endpoint bound: no dispatcher runs here to do it after the answer.
     */
    protected final void deriveStoredEvents() throws Exception {
        context.getRegistry().findSingleByType(WebhookEventDeriver.class).deriveNext(1000);
    }

    protected final void storeUnifyPortMessage(String eventId, String dataJson, Duration quietPeriod) throws Exception {
        new DerivingEventStore(db, "default", ChildMessages.listener(new QuietPeriods(quietPeriod, quietPeriod)))
                .store(RouteFile.unifyPortEvents(SignedDeliverySender.envelope(eventId, "message.received", "whatsapp", "acc_1",
                        Instant.now(), dataJson), "dlv_" + eventId));
    }

    @Override
    public void configureTest(TestExecutionConfiguration test) {
        super.configureTest(test);
        test.withUseAdviceWith(true);
    }

    @Override
    public void configureContext(CamelContextConfiguration camel) {
        super.configureContext(camel);
        Properties overrides = new Properties();
        overrides.putAll(settings());
        camel.withUseOverridePropertiesWithPropertiesComponent(overrides);
    }

    @Override
    protected CamelContext createCamelContext() throws Exception {
        CamelContext camel = super.createCamelContext();
        camel.getPropertiesComponent().setLocation("file:" + CONFIG);
        return camel;
    }

    @Override
    protected void bindToRegistry(Registry registry) throws Exception {
        Settings settings = productSettings();
        registry.bind("dataSource", db);
        registry.bind("childMessageListener", ChildMessages.listener(QuietPeriods.from(settings)));
        bindBeans(registry, settings);
    }

    /** The configuration as the runner's beans read it: the file, this test's keys, the environment for keys the file lacks. */
    private Settings productSettings() throws IOException {
        Properties file = new Properties();
        try (Reader reader = Files.newBufferedReader(CONFIG)) {
            file.load(reader);
        }
        Map<String, String> values = new TreeMap<>();
        file.stringPropertyNames().forEach(key -> values.put(key, file.getProperty(key)));
        values.putAll(settings());
        return Settings.resolved(null, values, System.getenv());
    }
}
