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

        // Warnings (effects not yet guarded in a shipped file) do not count here.
        List<String> lines = out.toString(StandardCharsets.UTF_8).lines().filter(l -> !l.contains(": warning: ")).toList();
        assertThat(lines.get(0)).startsWith(routes.resolve("hello.yaml") + ":5: YAML syntax: expected ',' or ']'");
        assertThat(lines.subList(1, lines.size() - 1)).containsExactly(
                routes.resolve("retention.yaml") + ":11: bean 'retentionJob' is not bound (neither a bean of the application nor"
                        + " defined in a beans: section)",
                routes.resolve("telegram.yaml") + ":" + lineOf(routes.resolve("telegram.yaml"), "leaseSecnds:")
                        + ": telegram-inbox: unknown option 'leaseSecnds'",
                routes.resolve("unifyport-webhook.yaml") + ":21: placeholder {{unifyport.workspace-name}} has no value: set"
                        + " unifyport.workspace-name in the configuration or UNIFYPORT_WORKSPACE_NAME");
        assertThat(lines.get(lines.size() - 1)).startsWith("routes check: " + routeFiles() + " file(s), 4 problem(s)");
    }

    @Test
    void aQueuedKindThatNoRouteConsumesIsAProblemAtTheIntake() throws Exception {
        Path routes = dir.resolve("routes");
        copy(Path.of("routes"), routes);
        Files.delete(routes.resolve("unifyport-handlers.yaml"));

        assertThat(routesCheck(routes.toString())).isEqualTo(1);

        assertThat(out.toString(StandardCharsets.UTF_8)).contains(routes.resolve("unifyport-webhook.yaml") + ":"
                + lineOf(routes.resolve("unifyport-webhook.yaml"), "uri: \"webhook-inbox:unifyport\"")
                + ": work:unifyport-event is queued here, but no route consumes it (from: \"work:unifyport-event\"): its items would"
                + " wait, unhandled").contains(", 1 problem(s)");
    }

    @Test
    void twoRoutesConsumingOneKindAreAProblemNamingBoth() throws Exception {
        Path routes = shippedRoutesWith("my-telegram.yaml", """
                - route:
                    id: my-telegram
                    from:
                      uri: "work:telegram-update"
                      steps:
                        - log: "mine"
                """);

        assertThat(routesCheck(routes.toString())).isEqualTo(1);

        assertThat(out.toString(StandardCharsets.UTF_8)).contains(routes.resolve("my-telegram.yaml") + ":4: work:telegram-update is"
                + " consumed by two routes, here and at " + routes.resolve("handlers.yaml") + ":" + lineOf(routes.resolve("handlers.yaml"),
                "uri: \"work:telegram-update\"") + ": one kind has one handler route per process");
    }

    @Test
    void aConsumedKindThatNothingQueuesIsAWarningThatDoesNotFailTheCheck() throws Exception {
        Path routes = shippedRoutesWith("crm.yaml", """
                - route:
                    id: crm-sync
                    from:
                      uri: "work:crm-sync"
                      steps:
                        - log: "crm ${header.IdempotencyKey}"
                """);

        assertThat(routesCheck(routes.toString())).as(out.toString(StandardCharsets.UTF_8)).isZero();

        assertThat(out.toString(StandardCharsets.UTF_8)).contains(routes.resolve("crm.yaml") + ":4: warning: work:crm-sync is consumed"
                + " here, but nothing queues it (to: \"work:crm-sync\", or a webhook-inbox's workKind)").contains("no problems");
    }

    @Test
    void anEffectRunAsWorkOutsideAGuardedEffectPolicyIsAWarningInsideOneItIsNot() throws Exception {
        Path routes = dir.resolve("routes");
        Files.createDirectories(routes);
        Files.copy(Path.of("routes/telegram.yaml"), routes.resolve("telegram.yaml"));
        Files.writeString(routes.resolve("replies.yaml"), """
                - route:
                    id: replies
                    from:
                      uri: "work:telegram-update"
                      steps:
                        - policy:
                            id: guarded-reply
                            ref: guardedEffect
                            steps:
                              - to: "telegram-bot:main?method=sendMessage"
                        - to: "direct:notify"
                - route:
                    id: notify
                    from:
                      uri: "direct:notify"
                      steps:
                        - to: "https://crm.example/notify"
                """);

        routesCheck(routes.toString());

        List<String> warnings = out.toString(StandardCharsets.UTF_8).lines().filter(l -> l.contains("warning:")).toList();
        assertThat(warnings).containsExactly(routes.resolve("replies.yaml") + ":17: warning: https: call run as work outside a"
                + " guardedEffect policy: a redelivered item would call it again (policy: {id: <effect name>, ref: guardedEffect,"
                + " steps: [...]})");
    }

    @Test
    void anUnknownWorkOptionAPlaceholderInAUriWithoutValueAndAnUnknownPolicyRefAreProblems() throws Exception {
        Path routes = shippedRoutesWith("crm.yaml", """
                - route:
                    id: crm-sync
                    from:
                      uri: "work:crm-sync"
                      steps:
                        - policy:
                            id: crm
                            ref: guardedEffectt
                            steps:
                              - log: "crm"
                """);
        edit(routes.resolve("attachments.yaml"), "uri: \"work:attachment\"", "uri: \"work:attachment?maxAttempt=3\"");
        edit(routes.resolve("retention.yaml"), "period={{retention.interval-minutes}}m", "period={{no.such.key.anywhere}}");

        assertThat(routesCheck(routes.toString())).isEqualTo(1);

        assertThat(out.toString(StandardCharsets.UTF_8).lines().filter(l -> !l.contains(": warning: ")).toList()).containsExactly(
                routes.resolve("attachments.yaml") + ":" + lineOf(routes.resolve("attachments.yaml"), "maxAttempt=")
                        + ": work: unknown option 'maxAttempt'",
                routes.resolve("crm.yaml") + ":8: bean 'guardedEffectt' is not bound (neither a bean of the application nor"
                        + " defined in a beans: section)",
                routes.resolve("retention.yaml") + ":" + lineOf(routes.resolve("retention.yaml"), "no.such.key.anywhere")
                        + ": placeholder {{no.such.key.anywhere}} has no value: set no.such.key.anywhere in the configuration or"
                        + " NO_SUCH_KEY_ANYWHERE",
                "routes check: " + (routeFiles() + 1) + " file(s), 3 problem(s), " + out.toString(StandardCharsets.UTF_8).lines()
                        .filter(l -> l.contains(": warning: ")).count() + " warning(s)");
    }

    /** A copy of the shipped routes plus {@code file} with {@code yaml}. */
    private Path shippedRoutesWith(String file, String yaml) throws Exception {
        Path routes = dir.resolve("routes");
        copy(Path.of("routes"), routes);
        Files.writeString(routes.resolve(file), yaml);
        return routes;
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
