package io.chatintake.ops;

import io.chatintake.config.ConfigurationException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/**
 * {@code k8s configmap}: {@code k8s/configmap.yaml} generated from the repository's
 * {@code config/application.properties} and {@code routes/}, each file verbatim, so the
 * Kubernetes deployment runs exactly what was committed. Run from the repository root:
 * {@value #COMMAND}.
 */
public final class KubernetesConfigMap {
    public static final String COMMAND = "java -jar target/chat-intake.jar k8s configmap > k8s/configmap.yaml";
    public static final String CONFIG_MAP = "chat-intake-config";
    public static final String ROUTES_MAP = "chat-intake-routes";
    public static final String CONFIG_KEY = "application.properties";
    private static final String INDENT = "    ";

    private KubernetesConfigMap() {
    }

    /** The manifest for the configuration file and the routes directory of a checkout. */
    public static String render(Path configFile, Path routesDir) {
        if (!Files.isRegularFile(configFile) || !Files.isDirectory(routesDir)) {
            throw new ConfigurationException("k8s configmap: run it from the repository root (needs " + configFile + " and "
                    + routesDir + "/)");
        }
        StringBuilder out = new StringBuilder()
                .append("# GENERATED from config/application.properties and routes/ by\n")
                .append("#   ").append(COMMAND).append('\n')
                .append("# Do not edit: change those files and run the command again (KubernetesManifestsTest compares).\n");
        configMap(out, CONFIG_MAP, "the runner's configuration file (CHAT_INTAKE_CONFIG)");
        entry(out, CONFIG_KEY, read(configFile));
        out.append("---\n");
        configMap(out, ROUTES_MAP, "the routes (CHAT_INTAKE_ROUTES_DIR), reloaded when this ConfigMap changes");
        for (Path file : routeFiles(routesDir)) {
            entry(out, file.getFileName().toString(), read(file));
        }
        return out.toString();
    }

    private static void configMap(StringBuilder out, String name, String what) {
        out.append("# ").append(what).append('\n')
                .append("apiVersion: v1\n")
                .append("kind: ConfigMap\n")
                .append("metadata:\n")
                .append("  name: ").append(name).append('\n')
                .append("  labels:\n")
                .append("    app.kubernetes.io/name: chat-intake\n")
                .append("data:\n");
    }

    private static List<Path> routeFiles(Path routesDir) {
        try (Stream<Path> files = Files.list(routesDir)) {
            return files.filter(Files::isRegularFile).sorted().toList();
        } catch (IOException e) {
            throw new ConfigurationException("k8s configmap: cannot list " + routesDir + ": " + e.getMessage(), e);
        }
    }

    private static String read(Path file) {
        try {
            return Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new ConfigurationException("k8s configmap: cannot read " + file + ": " + e.getMessage(), e);
        }
    }

    /**
     * One file as a YAML literal block, byte for byte: the chomping indicator keeps its exact
     * trailing newlines, and an indentation indicator is given when its first line starts with a space.
     */
    private static void entry(StringBuilder out, String key, String content) {
        if (!key.matches("[-._a-zA-Z0-9]+")) {
            throw new ConfigurationException("k8s configmap: '" + key + "' is not a valid ConfigMap key; rename the file");
        }
        if (content.chars().anyMatch(c -> c < 0x20 && c != '\n' && c != '\t')) {
            throw new ConfigurationException("k8s configmap: " + key + " holds control characters (e.g. CR line ends); save it with LF line ends");
        }
        out.append("  ").append(key).append(": ");
        if (content.isEmpty()) {
            out.append("\"\"\n");
            return;
        }
        String chomping = !content.endsWith("\n") ? "-" : content.endsWith("\n\n") ? "+" : "";
        String firstLine = content.lines().filter(l -> !l.isEmpty()).findFirst().orElse("");
        String indentation = firstLine.startsWith(" ") ? Integer.toString(INDENT.length() - 2) : "";
        out.append('|').append(indentation).append(chomping).append('\n');
        String body = content.endsWith("\n") ? content.substring(0, content.length() - 1) : content;
        for (String line : body.split("\n", -1)) {
            out.append(line.isEmpty() ? "" : INDENT + line).append('\n');
        }
    }
}
