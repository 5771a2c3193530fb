package io.chatintake.testkit;

import io.chatintake.channel.webhook.EventMapping;
import io.chatintake.channel.webhook.WebhookEvent;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.snakeyaml.engine.v2.api.Load;
import org.snakeyaml.engine.v2.api.LoadSettings;

/** Reads a shipped route file, so tests check the configuration users get, not a copy of it. */
public final class RouteFile {
    private RouteFile() {
    }

    /** The events of one UnifyPort delivery body, mapped as the shipped routes/unifyport-webhook.yaml maps them. */
    public static List<WebhookEvent> unifyPortEvents(byte[] body, String deliveryId) {
        return new EventMapping(mappingOptions(Path.of("routes/unifyport-webhook.yaml"), "unifyport"))
                .events(body, "application/json", header -> null, deliveryId);
    }

    /** The event mapping options of the file's {@code webhook-inbox:<channel>} step. */
    @SuppressWarnings("unchecked")
    public static Map<String, String> mappingOptions(Path file, String channel) {
        String yaml;
        try {
            yaml = Files.readString(file);
        } catch (IOException e) {
            throw new IllegalStateException(e);
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
