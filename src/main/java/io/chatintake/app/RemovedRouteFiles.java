package io.chatintake.app;

import io.chatintake.work.KindHandler;
import java.io.IOException;
import java.nio.file.ClosedWatchServiceException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchEvent;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.util.List;
import java.util.concurrent.ExecutorService;
import org.apache.camel.CamelContext;
import org.apache.camel.Route;
import org.apache.camel.support.RouteWatcherReloadStrategy;
import org.apache.camel.support.service.ServiceHelper;
import org.apache.camel.support.service.ServiceSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A route file deleted from the routes directory while the runner runs takes its routes with it:
 * they are stopped and removed, as Camel's route watcher (which reacts to files created or
 * changed) never does. A handler file deleted so stops its kind of work here; its items wait,
 * and one WARN line says so for each kind no other route consumes.
 * A file deleted and written again at once (an editor's save) keeps its routes, and the new
 * version is Camel's watcher's to reload.
 */
final class RemovedRouteFiles extends ServiceSupport {
    private static final Logger LOG = LoggerFactory.getLogger(RemovedRouteFiles.class);

    private final CamelContext context;
    private final Path directory;
    private RouteWatcherReloadStrategy routeReload;
    private WatchService watcher;
    private ExecutorService executor;

    private RemovedRouteFiles(CamelContext context, Path directory) {
        this.context = context;
        this.directory = directory;
    }

    /** Starts with the context (after its route watcher), and stops with it. */
    static void start(CamelContext context, Path routesDir) {
        try {
            context.addService(new RemovedRouteFiles(context, routesDir));
        } catch (Exception e) {
            throw new IllegalStateException("cannot watch " + routesDir + " for deleted route files: " + e.getMessage(), e);
        }
    }

    @Override
    protected void doStart() throws Exception {
        routeReload = context.hasService(RouteWatcherReloadStrategy.class);
        if (routeReload == null || !Files.isDirectory(directory)) {
            return; // reload is off: route files apply at the next start
        }
        watcher = directory.getFileSystem().newWatchService();
        directory.register(watcher, StandardWatchEventKinds.ENTRY_DELETE);
        executor = context.getExecutorServiceManager().newSingleThreadExecutor(this, "RemovedRouteFiles");
        executor.submit(this::watch);
    }

    private void watch() {
        try {
            while (isRunAllowed()) {
                WatchKey key = watcher.take();
                List<Path> deleted = key.pollEvents().stream().map(WatchEvent::context).filter(Path.class::isInstance)
                        .map(p -> directory.resolve((Path) p).toAbsolutePath().normalize()).toList();
                if (!key.reset()) {
                    LOG.warn("routes: {} can no longer be watched; deleted route files apply at the next restart", directory);
                    return;
                }
                deleted.stream().filter(f -> routeReload.getFileFilter().accept(f.toFile()) && !Files.exists(f)).forEach(this::remove);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ClosedWatchServiceException e) {
            // stopped
        }
    }

    private void remove(Path file) {
        List<Route> routes = context.getRoutes().stream().filter(r -> r.getSourceResource() != null
                && file.equals(location(r.getSourceResource().getLocation()))).toList();
        for (Route route : routes) {
            try {
                context.getRouteController().stopRoute(route.getRouteId());
                context.removeRoute(route.getRouteId());
            } catch (Exception e) {
                LOG.warn("routes: route {} of deleted {} could not be removed: {}", route.getRouteId(), file.getFileName(), e.getMessage());
            }
        }
        if (!routes.isEmpty()) {
            LOG.info("routes: {} deleted; its routes stopped and removed: {}", file.getFileName(),
                    routes.stream().map(Route::getRouteId).toList());
        }
        routes.stream().filter(r -> r.getConsumer() instanceof KindHandler).map(r -> ((KindHandler) r.getConsumer()).kind())
                .distinct().filter(kind -> !handled(kind)).forEach(kind -> LOG.warn("routes: {} deleted: no route consumes work:{} any"
                        + " more; items of kind {} now wait as pending (none is parked) until a route from work:{} runs", file.getFileName(),
                        kind, kind, kind));
    }

    /** Whether a started route of this context still consumes the kind. */
    private boolean handled(String kind) {
        return context.getRoutes().stream().anyMatch(r -> r.getConsumer() instanceof KindHandler handler && handler.kind().equals(kind)
                && ServiceHelper.isStarted(r.getConsumer()));
    }

    /** A resource location ({@code file:/dir/x.yaml}) as a path. */
    private static Path location(String location) {
        String path = location.startsWith("file:") ? location.substring("file:".length()) : location;
        try {
            return Path.of(path).toAbsolutePath().normalize();
        } catch (RuntimeException e) {
            return null;
        }
    }

    @Override
    protected void doStop() throws IOException {
        if (watcher != null) {
            watcher.close();
        }
        if (executor != null) {
            context.getExecutorServiceManager().shutdownNow(executor);
        }
    }
}
