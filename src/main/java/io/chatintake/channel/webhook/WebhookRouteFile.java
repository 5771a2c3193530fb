package io.chatintake.channel.webhook;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
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
    static Map<String, String> mappingOptions(Path file, String channel) {
        Map<String, String> options = new LinkedHashMap<>();
        step(file, channel).orElseThrow(() -> new IllegalStateException(file + " has no webhook-inbox:" + channel + " step"))
                .parameters().forEach((key, value) -> {
                    if (EventMapping.OPTIONS.contains(key)) {
                        options.put(key, value);
                    }
                });
        return options;
    }

    /**
     * A route's {@code webhook-inbox:<channel>} step as written.
     *
     * @param fromUri    the URI the route receives on ({@code platform-http:/webhooks/slack?...})
     * @param parameters the step's parameters, values as written (placeholders unresolved)
     */
    public record Step(Path file, String fromUri, Map<String, String> parameters) {
        /** The HTTP path the route receives on, e.g. {@code /webhooks/slack}. */
        public String httpPath() {
            String rest = fromUri.substring(fromUri.indexOf(':') + 1);
            int query = rest.indexOf('?');
            return query < 0 ? rest : rest.substring(0, query);
        }
    }

    /** The step of the channel in any YAML route file of {@code dir}. */
    public static Optional<Step> find(Path dir, String channel) {
        try (Stream<Path> files = Files.list(dir)) {
            for (Path file : files.filter(f -> f.toString().matches(".*\\.ya?ml$")).sorted().toList()) {
                Optional<Step> step = step(file, channel);
                if (step.isPresent()) {
                    return step;
                }
            }
            return Optional.empty();
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + dir + ": " + e.getMessage(), e);
        }
    }

    /** The file's {@code webhook-inbox:<channel>} step, if it has one. */
    @SuppressWarnings("unchecked")
    public static Optional<Step> step(Path file, String channel) {
        String yaml;
        try {
            yaml = Files.readString(file);
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + file + ": " + e.getMessage(), e);
        }
        for (Object item : (List<Object>) new Load(LoadSettings.builder().build()).loadFromString(yaml)) {
            Map<String, Object> route = item instanceof Map<?, ?> m ? (Map<String, Object>) m.get("route") : null;
            if (route == null || !(route.get("from") instanceof Map<?, ?> from) || !(from.get("steps") instanceof List<?> steps)) {
                continue;
            }
            for (Object step : steps) {
                Object to = step instanceof Map<?, ?> s ? s.get("to") : null;
                if (to instanceof Map<?, ?> target && ("webhook-inbox:" + channel).equals(target.get("uri"))) {
                    Map<String, String> parameters = new LinkedHashMap<>();
                    if (target.get("parameters") instanceof Map<?, ?> given) {
                        given.forEach((key, value) -> parameters.put(String.valueOf(key), String.valueOf(value)));
                    }
                    return Optional.of(new Step(file, String.valueOf(from.get("uri")), parameters));
                }
            }
        }
        return Optional.empty();
    }
}
