package io.chatintake.app;

import io.chatintake.attachment.AttachmentFetcher;
import io.chatintake.attachment.AttachmentWorkSource;
import io.chatintake.config.ConfigurationException;
import io.chatintake.message.ChildMessageListener;
import io.chatintake.album.AlbumKey;
import io.chatintake.attachment.AttachmentStore;
import io.chatintake.support.ProcessIdentity;
import io.chatintake.album.QuietPeriods;
import io.chatintake.album.AlbumChildSource;
import io.chatintake.album.AlbumDecisionSource;
import io.chatintake.album.AlbumDecisions;
import io.chatintake.album.AlbumMetrics;
import io.chatintake.config.Settings;
import io.chatintake.support.MeterRegistryLookup;
import io.chatintake.ops.StatusPage;
import io.chatintake.store.Database;
import io.chatintake.store.DatabaseHealthCheck;
import io.chatintake.store.EmbeddedDatabase;
import io.chatintake.store.Migrations;
import io.chatintake.channel.telegram.SecondPollerGuard;
import io.chatintake.channel.telegram.TelegramBots;
import io.chatintake.channel.telegram.TelegramWorkSource;
import io.chatintake.work.EffectGuard;
import io.chatintake.work.Retention;
import io.chatintake.work.WorkDispatcher;
import io.chatintake.work.WorkQueue;
import io.chatintake.work.WorkSource;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.camel.CamelContext;
import org.apache.camel.Route;
import org.apache.camel.health.HealthCheckHelper;
import org.apache.camel.main.BaseMainSupport;
import org.apache.camel.main.Main;
import org.apache.camel.main.MainListenerSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the intake: configuration -> database -> migrations -> Camel (routes from
 * {@code routes/*.yaml}, reloaded on change, plus the components the product ships).
 */
public final class Runner {
    private static final Logger LOG = LoggerFactory.getLogger(Runner.class);

    public static final String HTTP_PORT = "chat-intake.http.port";
    public static final String HTTP_HOST = "chat-intake.http.host";
    public static final String HTTP_MAX_BODY_BYTES = "chat-intake.http.max-body-bytes";
    public static final String ROUTES_DIR = "chat-intake.routes-dir";
    public static final String ROUTES_RELOAD = "chat-intake.routes-reload";
    private static final int SHUTDOWN_WAIT_SECONDS = 60;

    private Runner() {
    }

    public static void run(Settings settings) {
        LOG.info("chat-intake {} starting; configuration from {}", version(),
                settings.source().map(p -> p.toAbsolutePath().toString()).orElse("built-in defaults (no config file found)"));
        // Read every setting the runner needs before starting anything, so a typo fails at once.
        int port = settings.getInt(HTTP_PORT, 8080);
        Path routesDir = Path.of(settings.get(ROUTES_DIR, "routes")).toAbsolutePath().normalize();
        boolean reload = settings.getBoolean(ROUTES_RELOAD, true);
        long maxBodyBytes = settings.getLong(HTTP_MAX_BODY_BYTES, 8L * 1024 * 1024);
        Database database = Database.open(settings);
        Main camel;
        try {
            LOG.info("migrations: {}", Migrations.apply(database.dataSource()));
            recordStart(database);
            camel = camelMain(settings, database, port, routesDir, reload, maxBodyBytes);
        } catch (RuntimeException e) {
            database.close();
            throw e;
        }
        // The JVM halts once its shutdown hooks return; this one holds it until Camel has finished
        // in-flight commits and the database is closed, so SIGTERM is a clean stop.
        CountDownLatch stopped = new CountDownLatch(1);
        Thread hold = new Thread(() -> awaitQuietly(stopped), "chat-intake-shutdown");
        Runtime.getRuntime().addShutdownHook(hold);
        try {
            camel.run();
        } catch (Exception e) {
            database.close();
            throw new ConfigurationException("Camel could not run the routes: " + EmbeddedDatabase.rootMessage(e), e);
        } finally {
            stopped.countDown();
        }
    }

    private static void awaitQuietly(CountDownLatch stopped) {
        try {
            stopped.await(SHUTDOWN_WAIT_SECONDS, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static Main camelMain(Settings settings, Database database, int port, Path routesDir, boolean reload,
                                  long maxBodyBytes) {
        Main camel = new Main();
        camel.bind("dataSource", database.dataSource());
        camel.bind("effectGuard", new EffectGuard(database.dataSource()));
        camel.bind("childMessageListener", childMessageListener(QuietPeriods.from(settings)));
        WorkDispatcher.Options workOptions = WorkDispatcher.Options.from(settings);
        WorkDispatcher[] dispatcher = new WorkDispatcher[1];
        // Webhook channels (webhook-inbox routes) register their own kinds in the registry when their route starts.
        List<WorkSource> workSources = List.of(new TelegramWorkSource("direct:telegram-update"),
                new AlbumChildSource(),
                new AlbumDecisionSource(),
                new AttachmentWorkSource("direct:attachment-fetch"));
        camel.bind("albumDecisions", new AlbumDecisions(database.dataSource()));
        // GET /status (off until chat-intake.status.token is set); camel-main adds RouteBuilder beans as routes.
        camel.bind("statusPageRoute", StatusPage.route(settings, database.dataSource()));
        // Retention: the background job is routes/retention.yaml (a timer calling this bean).
        camel.bind("retention", Retention.from(settings, database.dataSource()));
        camel.bind("attachmentFetcher", new AttachmentFetcher(database.dataSource(),
                AttachmentFetcher.Options.from(settings, workOptions.maxAttempts()),
                botName -> TelegramBots.token(botName, null, null, settings::get)));

        // Every key of the configuration file can be used as a {{placeholder}} in YAML routes.
        settings.describe().keySet().forEach(key -> settings.get(key).ifPresent(v -> camel.addInitialProperty(key, v)));

        Map<String, String> derived = Map.ofEntries(
                Map.entry("camel.main.name", "chat-intake"),
                Map.entry("camel.main.routes-include-pattern", "file:" + routesDir + "/*.yaml"),
                Map.entry("camel.main.routes-reload-enabled", Boolean.toString(reload)),
                Map.entry("camel.main.routes-reload-directory", routesDir.toString()),
                Map.entry("camel.main.routes-reload-pattern", "*.yaml"),
                // Reload only the changed file's routes: reloading all of them unregisters every HTTP
                // path for a moment, and a webhook answered 404 then is dead-lettered by its sender.
                Map.entry("camel.main.routes-reload-remove-all-routes", "false"),
                Map.entry("camel.server.enabled", "true"),
                Map.entry("camel.server.host", settings.get(HTTP_HOST, "0.0.0.0")),
                Map.entry("camel.server.port", Integer.toString(port)),
                // A hard ceiling for any request body, enforced while reading: without it the server
                // buffers whatever a client sends before a route can refuse it.
                Map.entry("camel.server.max-body-size", Long.toString(maxBodyBytes)),
                Map.entry("camel.management.enabled", "true"),
                Map.entry("camel.management.port", Integer.toString(port)),
                Map.entry("camel.management.health-check-enabled", "true"),
                Map.entry("camel.management.metrics-enabled", "true"),
                Map.entry("camel.metrics.enabled", "true"),
                // full: every check with its message and details, so /observe/health shows each bot's
                // poller and each channel's state, not just the checks that are down.
                Map.entry("camel.health.exposure-level", "full"),
                // Camel masks properties by the last part of their key; its own words miss bot-token,
                // signing-secrets and the like, so every secret key of the configuration is added.
                Map.entry("camel.main.additional-sensitive-keywords", settings.get("camel.main.additional-sensitive-keywords")
                        .map(own -> own + ",").orElse("") + settings.camelSensitiveKeywords()));
        settings.withPrefix("camel.").forEach(camel::addInitialProperty);
        // Replies through camel-telegram use the same bot and server as intake, set on the
        // component so that the token never has to be written into a route's URI.
        settings.get(TelegramBots.tokenKey(TelegramBots.MAIN)).ifPresent(token -> camel.addOverrideProperty("camel.component.telegram.authorization-token", token));
        camel.addOverrideProperty("camel.component.telegram.base-uri", TelegramBots.apiUrl(null, settings::get));
        derived.forEach(camel::addOverrideProperty);
        if (!Files.isDirectory(routesDir)) {
            try {
                Files.createDirectories(routesDir);
                LOG.warn("routes: directory {} did not exist ({}); created it empty; no route runs until one is added there",
                        routesDir, Settings.envName(ROUTES_DIR));
            } catch (IOException e) {
                throw new ConfigurationException(Settings.envName(ROUTES_DIR) + ": cannot create routes directory " + routesDir + ": " + e.getMessage());
            }
        }

        camel.addMainListener(new MainListenerSupport() {
            @Override
            public void afterConfigure(BaseMainSupport main) {
                HealthCheckHelper.getHealthCheckRegistry(main.getCamelContext())
                        .register(new DatabaseHealthCheck(database.dataSource()));
                // Refuses a camel-telegram consumer for a bot telegram-inbox polls, before any route starts.
                SecondPollerGuard.install(main.getCamelContext());
                // Bound before the routes start, so intake can wake it; it starts once they run.
                dispatcher[0] = new WorkDispatcher(main.getCamelContext(), new WorkQueue(database.dataSource()), workSources, workOptions);
                main.getCamelContext().getRegistry().bind("workDispatcher", dispatcher[0]);
            }

            @Override
            public void afterStart(BaseMainSupport main) {
                CamelContext context = main.getCamelContext();
                dispatcher[0].start();
                // A routes directory mounted from a ConfigMap changes without events Camel's watcher sees.
                ConfigMapRoutesReload.start(context, routesDir);
                AlbumMetrics.register(MeterRegistryLookup.of(context), database.dataSource());
                LOG.info("routes: {} running from {}/*.yaml: {}", context.getRoutes().size(), routesDir,
                        context.getRoutes().stream().map(Route::getRouteId).sorted().collect(Collectors.joining(", ")));
                LOG.info("http: listening on port {}; health at /observe/health, metrics at /observe/metrics", port);
                LOG.info("chat-intake ready");
            }

            @Override
            public void beforeStop(BaseMainSupport main) {
                LOG.info("chat-intake stopping: finishing in-flight work, then closing the database");
                if (dispatcher[0] != null) {
                    dispatcher[0].stop();
                }
            }

            @Override
            public void afterStop(BaseMainSupport main) {
                database.close();
                LOG.info("chat-intake stopped");
            }
        });
        return camel;
    }

    /** What happens when a channel stores a child message: its attachments are recorded, then its album is scheduled. */
    public static ChildMessageListener childMessageListener(QuietPeriods quietPeriods) {
        return ChildMessageListener.all(List.of(AttachmentStore::recordChildren, AlbumKey.scheduler(quietPeriods)));
    }

    /** {@link #childMessageListener(QuietPeriods)} with the default quiet periods. */
    public static ChildMessageListener childMessageListener() {
        return childMessageListener(QuietPeriods.DEFAULTS);
    }

    private static void recordStart(Database database) {
        try (Connection c = database.dataSource().getConnection();
             PreparedStatement ps = c.prepareStatement("INSERT INTO runner_start (host, pid, version) VALUES (?, ?, ?)")) {
            ps.setString(1, ProcessIdentity.host());
            ps.setLong(2, ProcessHandle.current().pid());
            ps.setString(3, version());
            ps.executeUpdate();
        } catch (SQLException e) {
            throw new IllegalStateException("cannot record the runner start: " + e.getMessage(), e);
        }
    }


    static String version() {
        String v = Runner.class.getPackage().getImplementationVersion();
        return v == null ? "dev" : v;
    }
}
