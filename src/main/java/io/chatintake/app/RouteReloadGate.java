package io.chatintake.app;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.camel.CamelContext;
import org.apache.camel.spi.Resource;
import org.apache.camel.spi.ResourceReload;
import org.apache.camel.support.RouteWatcherReloadStrategy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A route file changed while the runner runs (a save, a ConfigMap update) is checked as
 * {@code routes check} checks it before Camel reloads it. Camel removes a file's running routes
 * before it loads the new version, so a version that fails the check is refused here: its running
 * routes stay as they were, and the refusal is said once per version, in one line.
 */
final class RouteReloadGate implements ResourceReload {
    private static final Logger LOG = LoggerFactory.getLogger(RouteReloadGate.class);
    private static final int SETTLE_LOOKS = 3;

    private final ResourceReload reload;
    private final RoutesCheck check;
    /** Null when this process serves no HTTP. */
    private final StartingHttpGate httpGate;
    /** The problems last reported per file: one save can raise several file events. */
    private final Map<String, String> refused = new ConcurrentHashMap<>();

    private RouteReloadGate(ResourceReload reload, RoutesCheck check, StartingHttpGate httpGate) {
        this.reload = reload;
        this.check = check;
        this.httpGate = httpGate;
    }

    /**
     * Put before the context's route reload, if reload is on; the check reads the context's
     * configuration and registry.
     *
     * @param httpGate answers a swapped route's path 503 while the swap lasts; null without HTTP
     */
    static void install(CamelContext context, StartingHttpGate httpGate) {
        RouteWatcherReloadStrategy strategy = context.hasService(RouteWatcherReloadStrategy.class);
        if (strategy == null || strategy.getResourceReload() == null || strategy.getResourceReload() instanceof RouteReloadGate) {
            return;
        }
        RoutesCheck check = new RoutesCheck(key -> context.getPropertiesComponent().resolveProperty(key),
                name -> context.getRegistry().lookupByName(name) != null);
        strategy.setResourceReload(new RouteReloadGate(strategy.getResourceReload(), check, httpGate));
    }

    private static String read(Resource resource) throws IOException {
        try (InputStream in = resource.getInputStream()) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    private static List<RoutesCheck.Problem> refusing(List<RoutesCheck.Problem> found) {
        return found.stream().filter(RoutesCheck.Problem::refusesReload).toList();
    }

    @Override
    public void onReload(String name, Resource resource) throws Exception {
        reloadIfValid(name, resource);
    }

    /** Hands the file to Camel's reload if it passes the check; false when it was refused. */
    boolean reloadIfValid(String name, Resource resource) throws Exception {
        if (!name.matches(".*\\.(yaml|yml|java)$")) {
            swap(name, resource);
            return true;
        }
        String content;
        List<RoutesCheck.Problem> problems;
        try {
            content = read(resource);
            problems = refusing(check.check(Path.of(name), content));
            // A save can be seen half-written (truncated, then written): look again while it changes.
            for (int look = 0; look < SETTLE_LOOKS && !problems.isEmpty() && !content.equals(read(resource)); look++) {
                content = read(resource);
                problems = refusing(check.check(Path.of(name), content));
            }
        } catch (IOException e) {
            swap(name, resource); // gone or unreadable: Camel's reload says what it does with it
            return true;
        }
        if (problems.isEmpty()) {
            refused.remove(name);
            swap(name, resource);
            return true;
        }
        String described = problems.get(0) + (problems.size() > 1 ? " (and " + (problems.size() - 1) + " more)" : "");
        if (!described.equals(refused.put(name, described))) {
            LOG.warn("routes: {} refused, not reloaded: its running routes stay as they were: {}; see java -jar chat-intake.jar routes check {}",
                    Path.of(name).getFileName(), described, name);
        }
        return false;
    }

    /** Camel removes the file's routes, then adds their new version: a delivery meanwhile is told to retry, never 404. */
    private void swap(String name, Resource resource) throws Exception {
        if (httpGate == null) {
            reload.onReload(name, resource);
            return;
        }
        httpGate.reloading();
        try {
            reload.onReload(name, resource);
        } finally {
            httpGate.reloaded();
        }
    }
}
