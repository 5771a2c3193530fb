package io.chatintake.app;

import io.chatintake.album.AlbumMetrics;
import io.chatintake.channel.telegram.TelegramBotRoutes;
import io.chatintake.support.MeterRegistryLookup;
import io.chatintake.work.WorkDispatcher;
import java.nio.file.Path;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.apache.camel.CamelContext;
import org.apache.camel.Route;
import org.apache.camel.VetoCamelContextStartException;
import org.apache.camel.support.LifecycleStrategySupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The runner's steps in Camel's lifecycle: the work dispatcher's workers start once every route
 * runs (they call handler routes) and stop before the routes do, so no handler meets a stopped
 * route; the bots of {@code telegram.bots} get their routes from the template with the other routes,
 * and follow the configuration from then on; the ready and stopped lines say when the runner takes
 * and has left traffic.
 */
final class RunnerLifecycle extends LifecycleStrategySupport {
    private static final Logger LOG = LoggerFactory.getLogger(RunnerLifecycle.class);

    private final WorkDispatcher dispatcher;
    private final DataSource dataSource;
    private final Path routesDir;
    /** Null when the data source was given, already open. */
    private final DatabaseService database;
    /** Null when this process serves no HTTP. */
    private final StartingHttpGate gate;

    RunnerLifecycle(WorkDispatcher dispatcher, DataSource dataSource, Path routesDir, DatabaseService database, StartingHttpGate gate) {
        this.dispatcher = dispatcher;
        this.dataSource = dataSource;
        this.routesDir = routesDir;
        this.database = database;
        this.gate = gate;
    }

    private boolean databaseOpen() {
        return database == null || database.isOpen();
    }

    /** Before any route is built: a listed bot's route is checked and started with the others. */
    @Override
    public void onContextInitializing(CamelContext context) throws VetoCamelContextStartException {
        // Without a database no route can do its work yet: none starts taking messages until it answers.
        if (!databaseOpen()) {
            context.setAutoStartup(false);
        }
        try {
            new TelegramBotRoutes(context).sync(true);
        } catch (Exception e) {
            throw new VetoCamelContextStartException(e.getMessage(), e, context, true);
        }
    }

    /** Called once the context has started, routes included unless the database is awaited. */
    @Override
    public void onContextStarted(CamelContext context) {
        if (databaseOpen()) {
            ready(context);
            return;
        }
        database.awaitThen(context, () -> {
            try {
                context.setAutoStartup(true);
                context.getRouteController().startAllRoutes();
            } catch (Exception e) {
                throw new IllegalStateException("routes: cannot start them: " + e.getMessage(), e);
            }
            ready(context);
        });
    }

    private void ready(CamelContext context) {
        TelegramBotRoutes bots = new TelegramBotRoutes(context);
        try {
            bots.sync(true);
        } catch (Exception e) {
            throw new IllegalStateException(e.getMessage(), e);
        }
        ConfigurationReload.start(context, bots);
        dispatcher.start();
        AlbumMetrics.register(MeterRegistryLookup.of(context), dataSource);
        // A route file changed from now on is checked before it replaces its running routes.
        RouteReloadGate.install(context, gate);
        // Camel's own file watcher misses a ConfigMap update (a ..data symlink swap).
        ConfigMapRoutesReload.start(context, routesDir);
        RemovedRouteFiles.start(context, routesDir);
        LOG.info("routes: {} running from {}: {}", context.getRoutes().size(), routesDir,
                context.getRoutes().stream().map(Route::getRouteId).sorted().collect(Collectors.joining(", ")));
        String httpPort = context.resolvePropertyPlaceholders("{{camel.server.port}}");
        String managementPort = context.getPropertiesComponent().resolveProperty("camel.management.port").orElse(httpPort);
        if (managementPort.equals(httpPort)) {
            LOG.info("http: listening on port {}; health at /observe/health, metrics at /observe/metrics", httpPort);
        } else {
            LOG.info("http: webhooks on port {}; health at /observe/health, metrics at /observe/metrics and /status on management port {}",
                    httpPort, managementPort);
        }
        if (gate != null) {
            gate.open();
        }
        LOG.info("chat-intake ready");
    }

    @Override
    public void onContextStopping(CamelContext context) {
        LOG.info("chat-intake stopping: finishing in-flight work, then closing the database");
        dispatcher.stop();
    }

    @Override
    public void onContextStopped(CamelContext context) {
        LOG.info("chat-intake stopped");
    }
}
