package io.chatintake.channel.webhook;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.snakeyaml.engine.v2.api.Load;
import org.snakeyaml.engine.v2.api.LoadSettings;

/**
 * A route file's {@code webhook-inbox} step read outside Camel, so that benchmarks and tests map
 * deliveries as the configuration users edit does, never as a copy of it that drifts.
 */
public final class WebhookRouteFile {
    private static final String INBOX = "webhook-inbox:";
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
     * @param channel    the step's channel ({@code webhook-inbox:<channel>})
     * @param fromUri    the URI the route receives on ({@code platform-http:/webhooks/slack?...})
     * @param parameters the step's parameters, values as written (placeholders unresolved)
     */
    public record Step(Path file, String channel, String fromUri, Map<String, String> parameters) {
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
    public static Optional<Step> step(Path file, String channel) {
        return steps(file).stream().filter(step -> step.channel().equals(channel)).findFirst();
    }

    /**
     * The configuration keys that the route files of {@code dir} name as holding secrets
     * ({@code secretsKey} unless its scheme takes public keys, {@code verifyTokenKey}), so that
     * commands know them as secrets before any route runs; none when the directory is missing.
     */
    public static Set<String> secretKeys(Path dir) {
        Set<String> keys = new TreeSet<>();
        if (!Files.isDirectory(dir)) {
            return keys;
        }
        try (Stream<Path> files = Files.list(dir)) {
            for (Path file : files.filter(f -> f.toString().matches(".*\\.ya?ml$")).sorted().toList()) {
                for (Step step : steps(file)) {
                    keys.add(step.parameters().getOrDefault("secretsKey", step.channel() + ".signing-secrets"));
                    Optional.ofNullable(step.parameters().get("verifyTokenKey")).ifPresent(keys::add);
                    if (takesPublicKeys(step.parameters().get("scheme"))) {
                        keys.remove(step.parameters().getOrDefault("secretsKey", step.channel() + ".signing-secrets"));
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            // A file that does not read is reported where routes are loaded; its keys stay secret by name only.
        }
        return keys;
    }

    private static boolean takesPublicKeys(String scheme) {
        try {
            return scheme != null && SignatureScheme.parse(scheme).algorithm().publicKey();
        } catch (RuntimeException e) {
            return false; // a placeholder or a typo: the key is treated as secret
        }
    }

    /** Every {@code webhook-inbox} step of the file, in order. */
    @SuppressWarnings("unchecked")
    private static List<Step> steps(Path file) {
        String yaml;
        try {
            yaml = Files.readString(file);
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + file + ": " + e.getMessage(), e);
        }
        List<Step> found = new ArrayList<>();
        for (Object item : (List<Object>) new Load(LoadSettings.builder().build()).loadFromString(yaml)) {
            Map<String, Object> route = item instanceof Map<?, ?> m ? (Map<String, Object>) m.get("route") : null;
            if (route == null || !(route.get("from") instanceof Map<?, ?> from) || !(from.get("steps") instanceof List<?> steps)) {
                continue;
            }
            for (Object step : steps) {
                Object to = step instanceof Map<?, ?> s ? s.get("to") : null;
                if (to instanceof Map<?, ?> target && String.valueOf(target.get("uri")).startsWith(INBOX)) {
                    Map<String, String> parameters = new LinkedHashMap<>();
                    if (target.get("parameters") instanceof Map<?, ?> given) {
                        given.forEach((key, value) -> parameters.put(String.valueOf(key), String.valueOf(value)));
                    }
                    String channel = String.valueOf(target.get("uri")).substring(INBOX.length()).replaceFirst("\\?.*", "");
                    found.add(new Step(file, channel, String.valueOf(from.get("uri")), parameters));
                }
            }
        }
        return found;
    }
}
