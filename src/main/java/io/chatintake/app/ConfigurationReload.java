package io.chatintake.app;

import io.chatintake.channel.telegram.TelegramBotRoutes;
import io.chatintake.support.Redactor;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.camel.CamelContext;
import org.apache.camel.spi.PropertiesComponent;
import org.apache.camel.support.service.ServiceSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Configuration reload without a restart, for what can change while running: the bots of
 * {@code telegram.bots} and their tokens. The configuration files Camel reads ({@code file:}
 * locations, e.g. a mounted ConfigMap) are read again when their content changes (a ConfigMap
 * update swaps a symlink, so no file event names the file: the content is compared), then the
 * bots' routes are brought in line ({@link TelegramBotRoutes}). Environment variables never change
 * in a running process; a key they set keeps their value.
 */
final class ConfigurationReload extends ServiceSupport {
    private static final Logger LOG = LoggerFactory.getLogger(ConfigurationReload.class);
    /** Reading one small file this often costs nothing next to a bot added a few seconds sooner. */
    private static final long CHECK_MILLIS = 2000;

    private final CamelContext context;
    private final TelegramBotRoutes bots;
    private final Map<Path, String> digests = new HashMap<>();
    private ScheduledExecutorService executor;

    private ConfigurationReload(CamelContext context, TelegramBotRoutes bots) {
        this.context = context;
        this.bots = bots;
    }

    /** Starts checking now (the context has started); stops with the context. */
    static void start(CamelContext context, TelegramBotRoutes bots) {
        try {
            context.addService(new ConfigurationReload(context, bots));
        } catch (Exception e) {
            throw new IllegalStateException("cannot watch the configuration for changes: " + e.getMessage(), e);
        }
    }

    @Override
    protected void doStart() {
        changedFiles();
        executor = context.getExecutorServiceManager().newSingleThreadScheduledExecutor(this, "ConfigurationReload");
        executor.scheduleWithFixedDelay(this::check, CHECK_MILLIS, CHECK_MILLIS, TimeUnit.MILLISECONDS);
    }

    private void check() {
        try {
            if (changedFiles()) {
                context.getPropertiesComponent().reloadProperties(null);
                // A secret that arrives now (a new bot's token) is masked before anything can log it.
                Redactor.register(CamelConfiguration.resolved(context.getPropertiesComponent()).secretValues());
                LOG.info("configuration: {} changed; read again (bots of telegram.bots and their tokens apply now)", String.join(", ",
                        digests.keySet().stream().map(Path::toString).toList()));
            }
            bots.sync(false);
        } catch (Exception e) {
            LOG.warn("configuration: the check for changes failed ({}); tried again in {} ms", e.getMessage(), CHECK_MILLIS);
        }
    }

    /** @return whether a configuration file's content differs from the last check */
    private boolean changedFiles() {
        boolean changed = false;
        PropertiesComponent properties = context.getPropertiesComponent();
        for (String location : properties.getLocations()) {
            String plain = location.startsWith("file:") ? location.substring("file:".length()) : null;
            if (plain == null) {
                continue;
            }
            Path file = Path.of(plain.replaceFirst(";optional=true$", "")).toAbsolutePath();
            String digest = digest(file);
            String before = digests.put(file, digest);
            changed |= before != null && !before.equals(digest);
        }
        return changed;
    }

    private static String digest(Path file) {
        try {
            return Arrays.toString(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(file)));
        } catch (IOException e) {
            return "unreadable";
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    protected void doStop() {
        if (executor != null) {
            context.getExecutorServiceManager().shutdownNow(executor);
            executor = null;
        }
    }
}
