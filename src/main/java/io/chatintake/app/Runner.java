package io.chatintake.app;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Settings;
import io.chatintake.store.EmbeddedDatabase;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.camel.CamelContext;
import org.apache.camel.FailedToCreateRouteException;
import org.apache.camel.FailedToStartRouteException;
import org.apache.camel.main.Main;
import org.apache.camel.model.Model;
import org.apache.camel.model.RouteDefinition;

/**
 * {@code java -jar chat-intake.jar}: camel-main with the configuration file and the one wiring,
 * {@link CamelConfiguration} (named in the file as {@code camel.main.configuration-classes}). All it
 * adds to camel-main's own {@code Main} is the file's location ({@code CHAT_INTAKE_CONFIG}),
 * configuration errors as one line, and a SIGTERM that waits for a clean stop.
 */
public final class Runner {
    private static final Logger LOG = LoggerFactory.getLogger(Runner.class);
    private static final int SHUTDOWN_WAIT_SECONDS = 60;
    /** Built-in defaults: the jar carries a copy of {@code config/application.properties}. */
    static final String DEFAULTS = "classpath:application.properties";

    private Runner() {
    }

    public static void run(Settings settings) {
        // Read through placeholders by camel-main: checked first, so a typo is one line naming its key.
        CamelConfiguration.checkHttpSettings(settings);
        CamelConfiguration.createRoutesDirectory(settings);
        Main camel = new Main();
        // Camel takes a key from the first location that has it: the file before the built-in defaults.
        camel.setPropertyPlaceholderLocations(settings.source().map(file -> "file:" + file.toAbsolutePath() + ",").orElse("") + DEFAULTS);
        // A key set by its old name is read by its new one everywhere, routes' placeholders included.
        settings.oldNamesInUse().forEach((oldKey, newKey) -> {
            LOG.warn("configuration: {} is now named {}; the old name still works", oldKey, newKey);
            camel.addOverrideProperty(newKey, settings.value(newKey));
        });
        // The file names it too; this keeps a configuration file without the key working.
        camel.addInitialProperty("camel.main.configuration-classes", CamelConfiguration.class.getName());
        // Camel masks properties by the last part of their key; its own words miss bot-token,
        // signing-secrets and the like, so every secret key of the configuration is added.
        camel.addInitialProperty("camel.main.additional-sensitive-keywords", settings.get("camel.main.additional-sensitive-keywords")
                .map(own -> own + ",").orElse("") + settings.camelSensitiveKeywords());
        // The JVM halts once its shutdown hooks return; this one holds it until Camel has finished
        // in-flight commits and the database is closed, so SIGTERM is a clean stop.
        CountDownLatch stopped = new CountDownLatch(1);
        Thread hold = new Thread(() -> awaitQuietly(stopped), "chat-intake-shutdown");
        Runtime.getRuntime().addShutdownHook(hold);
        try {
            camel.run();
            // A configuration error found once the awaited database answered stopped Camel.
            if (camel.getCamelContext() != null) {
                DatabaseService database = camel.getCamelContext().getRegistry().lookupByNameAndType(DatabaseService.NAME, DatabaseService.class);
                if (database != null && database.failure().isPresent()) {
                    throw database.failure().get();
                }
            }
        } catch (Exception e) {
            String where = failedRoute(camel, e);
            stopQuietly(camel);
            ConfigurationException error = configurationError(e);
            throw where == null ? error : new ConfigurationException(where + ": " + error.getMessage(), e);
        } finally {
            stopped.countDown();
        }
    }

    /** The configuration's own one-line error when it is the cause, else Camel's root message. */
    static ConfigurationException configurationError(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof ConfigurationException configuration) {
                return configuration;
            }
        }
        return new ConfigurationException("Camel could not run the routes: " + EmbeddedDatabase.rootMessage(e), e);
    }

    /**
     * "routes/x.yaml:4, route x" of the route Camel could not create or start (an unknown endpoint
     * option, a policy or bean ref that is not bound), or null when no route is to blame.
     */
    static String failedRoute(Main camel, Throwable e) {
        String routeId = null;
        for (Throwable t = e; t != null && routeId == null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof FailedToCreateRouteException create) {
                routeId = create.getRouteId();
            } else if (t instanceof FailedToStartRouteException start) {
                routeId = start.getRouteId();
            }
        }
        CamelContext context = camel.getCamelContext();
        if (routeId == null || context == null) {
            return null;
        }
        RouteDefinition route = context.getCamelContextExtension().getContextPlugin(Model.class).getRouteDefinition(routeId);
        if (route == null || route.getInput() == null || route.getInput().getLocation() == null) {
            return "route " + routeId;
        }
        String location = route.getInput().getLocation();
        return (location.startsWith("file:") ? location.substring("file:".length()) : location) + ":"
                + Math.max(1, route.getInput().getLineNumber()) + ", route " + routeId;
    }

    /** A start that failed midway may have opened the database: stopping Camel closes it. */
    private static void stopQuietly(Main camel) {
        try {
            if (camel.getCamelContext() != null) {
                camel.getCamelContext().stop();
            }
        } catch (RuntimeException ignored) {
            // Reporting the first failure matters more.
        }
    }

    private static void awaitQuietly(CountDownLatch stopped) {
        try {
            stopped.await(SHUTDOWN_WAIT_SECONDS, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static String version() {
        String v = Runner.class.getPackage().getImplementationVersion();
        return v == null ? "dev" : v;
    }
}
