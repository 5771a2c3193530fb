package io.chatintake.testkit;

import io.chatintake.album.QuietPeriods;
import io.chatintake.config.Settings;

import io.chatintake.app.Runner;

import io.chatintake.album.AlbumChildSource;
import io.chatintake.album.AlbumDecisionSource;
import io.chatintake.album.AlbumDecisions;
import io.chatintake.work.EffectGuard;
import io.chatintake.work.WorkDispatcher;
import io.chatintake.work.WorkQueue;
import java.net.URI;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.apache.camel.CamelContext;
import org.apache.camel.main.Main;
import org.apache.camel.processor.aggregate.jdbc.JdbcAggregationRepository;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/**
 * The shipped UnifyPort route files ({@code routes/unifyport-*.yaml}) running in this JVM on a
 * real platform-http server on loopback, over the given database: the route as users get it,
 * without packaging the jar.
 */
public final class WebhookServer implements AutoCloseable {
    private final Main main;
    private final int port;
    private WorkDispatcher dispatcher;

    private WebhookServer(Main main, int port) {
        this.main = main;
        this.port = port;
    }

    /**
     * The route files plus what runs stored work as the runner does: the album beans, and a real
     * work dispatcher for album children and decisions and every kind a route registered
     * (webhook channels), nudged by intake. {@code routes} should include the album and handler
     * files when albums are to be decided.
     */
    public static WebhookServer startWithWork(DataSource dataSource, Map<String, String> settings, String routes) {
        WebhookServer server = start(dataSource, settings, routes, Map.of("albumDecisions", new AlbumDecisions(dataSource),
                "effectGuard", new EffectGuard(dataSource)));
        server.dispatcher = new WorkDispatcher(server.context(), new WorkQueue(dataSource),
                List.of(new AlbumChildSource(), new AlbumDecisionSource()),
                new WorkDispatcher.Options(2, 5, Duration.ofMillis(100), Duration.ofMillis(500), Duration.ofSeconds(30),
                        Duration.ofMillis(50), Set.of("album-child")));
        server.context().getRegistry().bind("workDispatcher", server.dispatcher);
        server.dispatcher.start();
        return server;
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
        main.bind("childMessageListener", Runner.childMessageListener(QuietPeriods.from(Settings.of(settings))));
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
        if (dispatcher != null) {
            dispatcher.stop();
        }
        try {
            main.stop();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
