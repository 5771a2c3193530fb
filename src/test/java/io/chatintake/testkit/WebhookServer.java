package io.chatintake.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.apache.camel.CamelContext;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.main.Main;
import org.apache.camel.processor.aggregate.jdbc.JdbcAggregationRepository;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/**
 * The product in this JVM: camel-main with the shipped configuration ({@code config/application.properties},
 * which names {@code io.chatintake.app.CamelConfiguration}) over the given database, started as
 * the runner starts it; a test only overrides keys, picks route files, and may add its own beans
 * and routes on top. Without an override no work kind is handled here (its items stay pending),
 * and HTTP listens on a free loopback port.
 */
public final class WebhookServer implements AutoCloseable {

    private final Main main;
    private final int port;

    private WebhookServer(Main main, int port) {
        this.main = main;
        this.port = port;
    }

    /**
     * The route files plus what runs stored work as the runner does: the product's dispatcher for
     * every kind whose work: route the files hold, nudged by intake. {@code routes} should include the album and handler files when albums are to be decided.
     */
    public static WebhookServer startWithWork(DataSource dataSource, Map<String, String> settings, String routes) {
        return builder(dataSource).routeFiles(routes)
                .settings(Map.of("work.concurrency", "2", "work.max-attempts", "5", "work.backoff-base-millis", "100",
                        "work.backoff-cap-millis", "500", "work.claim-seconds", "30", "work.poll-interval-millis", "50",
                        "work.ordered-kinds", "album-child"))
                .settings(settings).start();
    }

    /** The shipped UnifyPort route files ({@code routes/unifyport-*.yaml}). */
    public static WebhookServer start(DataSource dataSource, Map<String, String> settings) {
        return start(dataSource, settings, "file:routes/unifyport-*.yaml");
    }

    /** @param routes Camel's routes-include-pattern, e.g. the shipped files plus one a test wrote */
    public static WebhookServer start(DataSource dataSource, Map<String, String> settings, String routes) {
        return builder(dataSource).settings(settings).routeFiles(routes).start();
    }

    /** @param beans bound before the configuration runs; a bean it would build is then kept as given */
    public static WebhookServer start(DataSource dataSource, Map<String, String> settings, String routes, Map<String, Object> beans) {
        Builder builder = builder(dataSource).settings(settings).routeFiles(routes);
        beans.forEach(builder::bean);
        return builder.start();
    }

    public static Builder builder(DataSource dataSource) {
        return new Builder(dataSource);
    }

    public static final class Builder {
        private final Map<String, Object> beans = new LinkedHashMap<>();
        private final Map<String, String> settings = new HashMap<>();
        private final List<RoutesBuilder> routes = new ArrayList<>();
        private String routeFiles = "";
        private boolean http = true;

        private Builder(DataSource dataSource) {
            beans.put("dataSource", dataSource);
        }

        /** Configuration keys as in {@code config/application.properties}; they win over the file and the environment. */
        public Builder settings(Map<String, String> values) {
            settings.putAll(values);
            return this;
        }

        public Builder setting(String key, String value) {
            settings.put(key, value);
            return this;
        }

        /** Route files, as Camel's routes-include-pattern (none by default). */
        public Builder routeFiles(String pattern) {
            routeFiles = pattern;
            return this;
        }

        /** A test's own routes, added on top of the route files. */
        public Builder routes(RoutesBuilder builder) {
            routes.add(builder);
            return this;
        }

        public Builder bean(String name, Object bean) {
            beans.put(name, bean);
            return this;
        }

        /** No HTTP server at all (tests of consumers and workers). */
        public Builder withoutHttp() {
            http = false;
            return this;
        }

        public WebhookServer start() {
            int port = RunnerProcess.freePort();
            Map<String, String> properties = new HashMap<>();
            try {
                properties.put("chat-intake.data-dir", Files.createTempDirectory("chat-intake-test-data").toString());
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            if (routeFiles.isEmpty()) {
                properties.put("camel.main.routes-collector-enabled", "false");
            } else {
                properties.put("camel.main.routes-include-pattern", routeFiles);
            }
            properties.put("camel.main.routes-reload-enabled", "false");
            properties.put("chat-intake.http.host", "127.0.0.1");
            properties.put("chat-intake.http.port", Integer.toString(port));
            if (!http) {
                properties.put("camel.server.enabled", "false");
                properties.put("camel.management.enabled", "false");
            }
            properties.putAll(settings);
            Main main = new Main();
            beans.forEach(main::bind);
            routes.forEach(main.configure()::addRoutesBuilder);
            properties.forEach(main::addOverrideProperty);
            try {
                main.start();
            } catch (Exception e) {
                throw new IllegalStateException("the product did not start: " + e.getMessage(), e);
            }
            return new WebhookServer(main, port);
        }
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
