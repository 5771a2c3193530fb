package io.chatintake.app;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code routes check}: the shipped routes pass; a copy with four kinds of mistake is refused, each named with file and line. */
class RoutesCheckTest {
    @TempDir
    Path dir;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();

    private int routesCheck(String target) {
        return Main.run(List.of("routes", "check", target), new PrintStream(out, true, StandardCharsets.UTF_8), System.err);
    }

    @Test
    void theShippedRoutesPass() throws Exception {
        assertThat(routesCheck("routes")).as(out.toString(StandardCharsets.UTF_8)).isZero();
        assertThat(out.toString(StandardCharsets.UTF_8)).contains("routes check: " + routeFiles() + " file(s), no problems");
    }

    @Test
    void aCopyWithAnUnknownOptionAnUnsetPlaceholderAMissingBeanAndBrokenYamlListsAllFour() throws Exception {
        Path routes = dir.resolve("routes");
        copy(Path.of("routes"), routes);
        edit(routes.resolve("telegram.yaml"), "leaseSeconds:", "leaseSecnds:");
        edit(routes.resolve("unifyport-webhook.yaml"), "{{unifyport.workspace}}", "{{unifyport.workspace-name}}");
        edit(routes.resolve("retention.yaml"), "ref: retention", "ref: retentionJob");
        edit(routes.resolve("hello.yaml"), "    id: hello", "    id: [hello");

        assertThat(routesCheck(routes.toString())).isEqualTo(1);

        List<String> lines = out.toString(StandardCharsets.UTF_8).lines().toList();
        assertThat(lines.get(0)).startsWith(routes.resolve("hello.yaml") + ":5: YAML syntax: expected ',' or ']'");
        assertThat(lines.subList(1, lines.size())).containsExactly(
                routes.resolve("retention.yaml") + ":11: bean 'retentionJob' is not bound (neither a bean of the application nor"
                        + " defined in a beans: section)",
                routes.resolve("telegram.yaml") + ":" + lineOf(routes.resolve("telegram.yaml"), "leaseSecnds:")
                        + ": telegram-inbox: unknown option 'leaseSecnds'",
                routes.resolve("unifyport-webhook.yaml") + ":21: placeholder {{unifyport.workspace-name}} has no value: set"
                        + " unifyport.workspace-name in the configuration or UNIFYPORT_WORKSPACE_NAME, or give it a default"
                        + " ({{unifyport.workspace-name:default}})",
                "routes check: " + routeFiles() + " file(s), 4 problem(s)");
    }

    private static long routeFiles() throws Exception {
        try (var files = Files.list(Path.of("routes"))) {
            return files.filter(f -> f.toString().matches(".*\\.(yaml|java)$")).count();
        }
    }

    private static int lineOf(Path file, String text) throws Exception {
        List<String> lines = Files.readAllLines(file);
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).contains(text)) {
                return i + 1;
            }
        }
        throw new AssertionError(text + " not in " + file);
    }

    private static void copy(Path from, Path to) throws Exception {
        Files.createDirectories(to);
        try (var files = Files.list(from)) {
            for (Path file : files.toList()) {
                Files.copy(file, to.resolve(file.getFileName()));
            }
        }
    }

    private static void edit(Path file, String from, String to) throws Exception {
        String text = Files.readString(file);
        assertThat(text).contains(from);
        Files.writeString(file, text.replace(from, to));
    }
}
