package io.chatintake.testkit;

import io.chatintake.app.Runner;

import java.net.URI;
import java.util.HashMap;
import java.util.Map;
import javax.sql.DataSource;
import org.apache.camel.CamelContext;
import org.apache.camel.main.Main;

/**
 * The shipped UnifyPort route files ({@code routes/unifyport-*.yaml}) running in this JVM on a
 * real platform-http server on loopback, over the given database: the route as users get it,
 * without packaging the jar.
 */
public final class WebhookServer implements AutoCloseable {
    private final Main main;
    private final int port;

    private WebhookServer(Main main, int port) {
        this.main = main;
        this.port = port;
    }

    /** @param settings configuration keys (e.g. {@code unifyport.signing-secrets}) as the runner would pass them */
    public static WebhookServer start(DataSource dataSource, Map<String, String> settings) {
        return start(dataSource, settings, "file:routes/unifyport-*.yaml");
    }

    /** @param routes Camel's routes-include-pattern, e.g. the shipped files plus one a test wrote */
    public static WebhookServer start(DataSource dataSource, Map<String, String> settings, String routes) {
        return start(dataSource, settings, routes, Map.of());
    }

    /** @param beans bound before the routes start, as the runner binds them (e.g. {@code attachmentFetcher}) */
    public static WebhookServer start(DataSource dataSource, Map<String, String> settings, String routes, Map<String, Object> beans) {
        int port = RunnerProcess.freePort();
        Main main = new Main();
        main.bind("dataSource", dataSource);
        main.bind("childMessageListener", Runner.childMessageListener());
        beans.forEach(main::bind);
        Map<String, String> properties = new HashMap<>(settings);
        properties.put("camel.main.routes-include-pattern", routes);
        properties.put("camel.server.enabled", "true");
        properties.put("camel.server.host", "127.0.0.1");
        properties.put("camel.server.port", Integer.toString(port));
        properties.put("camel.management.enabled", "true");
        properties.put("camel.management.port", Integer.toString(port));
        properties.put("camel.management.metrics-enabled", "true");
        properties.put("camel.metrics.enabled", "true");
        properties.forEach(main::addInitialProperty);
        try {
            main.start();
        } catch (Exception e) {
            throw new IllegalStateException("the webhook routes did not start: " + e.getMessage(), e);
        }
        return new WebhookServer(main, port);
    }

    public URI uri(String path) {
        return URI.create("http://127.0.0.1:" + port + path);
    }

    public CamelContext context() {
        return main.getCamelContext();
    }

    @Override
    public void close() {
        try {
            main.stop();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
