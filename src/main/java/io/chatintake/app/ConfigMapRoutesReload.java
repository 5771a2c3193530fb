package io.chatintake.app;

import java.io.IOException;
import java.nio.file.ClosedWatchServiceException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchEvent;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.stream.Stream;
import org.apache.camel.CamelContext;
import org.apache.camel.spi.Resource;
import org.apache.camel.spi.ResourceReload;
import org.apache.camel.support.PluginHelper;
import org.apache.camel.support.RouteWatcherReloadStrategy;
import org.apache.camel.support.service.ServiceSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Route reload for a routes directory that is a mounted Kubernetes ConfigMap.
 * <p>
 * Kubernetes updates such a volume by writing the new files into a fresh hidden directory and
 * swapping the {@code ..data} symlink to it; each route file is a symlink through {@code ..data},
 * so its content changes without any file event naming it, and Camel's route watcher (which reacts
 * to events on {@code *.yaml} names) never reloads it. This service waits for that swap and hands
 * each route file whose content changed to Camel's own route reload, which restarts only that
 * file's routes. Files the update adds are created as new symlinks, which Camel's watcher loads
 * itself; the routes of a file the update removes keep running until the next restart, as in a
 * plain directory.
 */
final class ConfigMapRoutesReload extends ServiceSupport {
    private static final Logger LOG = LoggerFactory.getLogger(ConfigMapRoutesReload.class);
    static final String DATA_LINK = "..data";

    private final CamelContext context;
    private final Path directory;
    private RouteWatcherReloadStrategy routeReload;
    private Map<Path, String> contents;
    private WatchService watcher;
    private ExecutorService executor;

    private ConfigMapRoutesReload(CamelContext context, Path directory) {
        this.context = context;
        this.directory = directory;
    }

    /** Starts with the context (after its route watcher), and stops with it. */
    static void start(CamelContext context, Path routesDir) {
        try {
            context.addService(new ConfigMapRoutesReload(context, routesDir));
        } catch (Exception e) {
            throw new IllegalStateException("cannot watch " + routesDir + " for ConfigMap updates: " + e.getMessage(), e);
        }
    }

    @Override
    protected void doStart() throws Exception {
        routeReload = context.hasService(RouteWatcherReloadStrategy.class);
        if (routeReload == null || !Files.isSymbolicLink(directory.resolve(DATA_LINK))) {
            return; // reload is off, or a plain directory: Camel's watcher sees its changes
        }
        contents = routeFileDigests();
        watcher = directory.getFileSystem().newWatchService();
        directory.register(watcher, StandardWatchEventKinds.ENTRY_CREATE);
        executor = context.getExecutorServiceManager().newSingleThreadExecutor(this, "ConfigMapRoutesReload");
        executor.submit(this::watch);
        LOG.info("routes: {} is a mounted ConfigMap; an update of it reloads the route files it changes", directory);
    }

    private void watch() {
        try {
            while (isRunAllowed()) {
                WatchKey key = watcher.take();
                boolean swapped = key.pollEvents().stream().map(WatchEvent::context).anyMatch(p -> p.toString().equals(DATA_LINK));
                if (!key.reset()) {
                    LOG.warn("routes: {} can no longer be watched; ConfigMap updates apply at the next restart", directory);
                    return;
                }
                if (swapped) {
                    reloadChanged();
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ClosedWatchServiceException e) {
            // stopped
        }
    }

    private void reloadChanged() {
        Map<Path, String> now = routeFileDigests();
        for (Map.Entry<Path, String> file : now.entrySet()) {
            String before = contents.get(file.getKey());
            if (before == null || before.equals(file.getValue())) {
                continue; // new files are Camel's watcher's; unchanged ones keep running untouched
            }
            String name = file.getKey().toString();
            try {
                Resource resource = PluginHelper.getResourceLoader(context).resolveResource("file:" + name);
                ResourceReload reload = routeReload.getResourceReload();
                if (reload instanceof RouteReloadGate gate) {
                    if (!gate.reloadIfValid(name, resource)) {
                        continue; // refused, said by the gate; its previous routes keep running
                    }
                } else {
                    reload.onReload(name, resource);
                }
                LOG.info("routes: reloaded {} after a ConfigMap update", file.getKey().getFileName());
            } catch (Exception e) {
                // Camel keeps the previous routes of a file that does not load.
                LOG.warn("routes: {} from the ConfigMap update did not load, its previous routes keep running: {}",
                        file.getKey().getFileName(), e.getMessage());
            }
        }
        contents = now;
    }

    /** Route files (Camel's reload pattern) by content digest, read through their symlinks. */
    private Map<Path, String> routeFileDigests() {
        Map<Path, String> digests = new HashMap<>();
        try (Stream<Path> files = Files.list(directory)) {
            for (Path file : files.filter(f -> !f.getFileName().toString().startsWith("..")).toList()) {
                if (Files.isRegularFile(file) && routeReload.getFileFilter().accept(file.toFile())) {
                    digests.put(file.toAbsolutePath(), sha256(Files.readAllBytes(file)));
                }
            }
        } catch (IOException e) {
            LOG.warn("routes: cannot read {} after a ConfigMap update: {}", directory, e.getMessage());
            return contents;
        }
        return digests;
    }

    private static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    protected void doStop() throws Exception {
        if (watcher != null) {
            watcher.close();
        }
        if (executor != null) {
            context.getExecutorServiceManager().shutdownNow(executor);
        }
    }
}
