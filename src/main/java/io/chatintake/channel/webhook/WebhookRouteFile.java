package io.chatintake.channel.webhook;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.snakeyaml.engine.v2.api.Load;
import org.snakeyaml.engine.v2.api.LoadSettings;

/**
 * A route file's {@code webhook-inbox} step read outside Camel, so that benchmarks and tests map
 * deliveries as the configuration users edit does, never as a copy of it that drifts.
 */
public final class WebhookRouteFile {
    private WebhookRouteFile() {
    }

    /** The mapping of the file's {@code webhook-inbox:<channel>} step. */
    public static EventMapping eventMapping(Path file, String channel) {
        return new EventMapping(mappingOptions(file, channel));
    }

    /** The event mapping options ({@link EventMapping#OPTIONS}) of the file's {@code webhook-inbox:<channel>} step. */
    @SuppressWarnings("unchecked")
    static Map<String, String> mappingOptions(Path file, String channel) {
        String yaml;
        try {
            yaml = Files.readString(file);
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + file + ": " + e.getMessage(), e);
        }
        for (Object item : (List<Object>) new Load(LoadSettings.builder().build()).loadFromString(yaml)) {
            Map<String, Object> route = (Map<String, Object>) ((Map<String, Object>) item).get("route");
            if (route == null) {
                continue;
            }
            Map<String, Object> from = (Map<String, Object>) route.get("from");
            for (Object step : (List<Object>) from.get("steps")) {
                Object to = ((Map<String, Object>) step).get("to");
                if (to instanceof Map<?, ?> target && ("webhook-inbox:" + channel).equals(target.get("uri"))) {
                    Map<String, String> options = new LinkedHashMap<>();
                    ((Map<String, Object>) target.get("parameters")).forEach((key, value) -> {
                        if (EventMapping.OPTIONS.contains(key)) {
                            options.put(key, String.valueOf(value));
                        }
                    });
                    return options;
                }
            }
        }
        throw new IllegalStateException(file + " has no webhook-inbox:" + channel + " step");
    }
}
