package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Each component's reference, src/main/docs/<scheme>-component.adoc, lists exactly the options and
 * headers of the metadata the build generates, and the README lists every component's headers:
 * a doc edited by hand or left behind by a changed option or header fails here, naming the command
 * that regenerates it.
 */
class ComponentDocsTest {
    private static final Pattern ROW_NAME = Pattern.compile("(?m)^\\| \\*([\\w.]+)\\*");

    @Test
    void everyComponentHasItsDocAndNoDocLacksAComponent() throws Exception {
        Map<String, JsonNode> components = ComponentDocs.metadata();
        assertThat(components).containsKeys("telegram-inbox", "telegram-bot", "webhook-inbox", "work");
        try (Stream<Path> docs = Files.list(ComponentDocs.DOCS)) {
            assertThat(docs.map(p -> p.getFileName().toString()).filter(n -> n.endsWith("-component.adoc")))
                    .containsExactlyInAnyOrderElementsOf(components.keySet().stream().map(ComponentDocs::fileName).toList());
        }
    }

    @Test
    void eachDocsOptionsAndHeadersAreThoseOfTheGeneratedMetadata() throws Exception {
        for (Map.Entry<String, JsonNode> component : ComponentDocs.metadata().entrySet()) {
            Path file = ComponentDocs.DOCS.resolve(ComponentDocs.fileName(component.getKey()));
            String doc = Files.readString(file);
            JsonNode metadata = component.getValue();
            assertThat(rowNames(part(doc, ComponentDocs.Part.COMPONENT_OPTIONS))).as(file + " component options")
                    .containsExactlyElementsOf(names(metadata.path("componentProperties")));
            assertThat(rowNames(part(doc, ComponentDocs.Part.ENDPOINT_OPTIONS))).as(file + " endpoint options")
                    .containsExactlyElementsOf(names(metadata.path("properties")));
            assertThat(rowNames(part(doc, ComponentDocs.Part.HEADERS))).as(file + " headers")
                    .containsExactlyElementsOf(names(metadata.path("headers")));
            assertThat(doc).as(file + " differs from the metadata (descriptions, defaults, types); run " + ComponentDocs.COMMAND)
                    .isEqualTo(ComponentDocs.update(doc, metadata));
        }
    }

    @Test
    void theReadmeListsEveryComponentsHeadersAndLinksItsDoc() throws Exception {
        String readme = Files.readString(ComponentDocs.README);
        assertThat(readme).contains(ComponentDocs.README_START, ComponentDocs.README_END);
        assertThat(readme).as("README.md's header list; run " + ComponentDocs.COMMAND)
                .isEqualTo(ComponentDocs.updateReadme(readme, ComponentDocs.metadata()));
        ComponentDocs.metadata().forEach((scheme, metadata) -> {
            assertThat(readme).contains("(src/main/docs/" + ComponentDocs.fileName(scheme) + ")");
            names(metadata.path("headers")).forEach(header -> assertThat(readme).contains("`" + header + "`"));
        });
    }

    @Test
    void theCheckFailsOnADocThatDiffersAndTheCommandRewritesIt(@TempDir Path root) throws Exception {
        Path docs = Files.createDirectories(root.resolve(ComponentDocs.DOCS));
        for (String scheme : ComponentDocs.metadata().keySet()) {
            Files.copy(ComponentDocs.DOCS.resolve(ComponentDocs.fileName(scheme)), docs.resolve(ComponentDocs.fileName(scheme)));
        }
        Files.copy(ComponentDocs.README, root.resolve(ComponentDocs.README));
        assertThat(docsCommand("--check", root.toString())).startsWith("0 ");

        Path inbox = docs.resolve(ComponentDocs.fileName("telegram-inbox"));
        String original = Files.readString(inbox);
        Files.writeString(inbox, original.lines().filter(line -> !line.startsWith("| *limit*"))
                .reduce("", (text, line) -> text + line + "\n"));
        assertThat(docsCommand("--check", root.toString())).as("an option row missing")
                .startsWith("1 ").contains(inbox.toString()).contains(ComponentDocs.COMMAND);
        Files.writeString(inbox, original.replace("ChatIntakeTelegramText*", "TelegramText*"));
        assertThat(docsCommand("--check", root.toString())).as("a header under another name").startsWith("1 ");
        Files.writeString(inbox, original.replace("| 100 |", "| 50 |"));
        assertThat(docsCommand("--check", root.toString())).as("a default changed").startsWith("1 ");
        Path readme = root.resolve(ComponentDocs.README);
        Files.writeString(readme, Files.readString(readme).replace("`ChatIntakeWorkKind`, ", ""));
        assertThat(docsCommand("--check", root.toString())).as("the README's list").startsWith("1 ").contains(readme.toString());

        assertThat(docsCommand(root.toString())).startsWith("0 ").contains("updated");
        assertThat(Files.readString(inbox)).isEqualTo(original);
        assertThat(Files.readString(readme)).isEqualTo(Files.readString(ComponentDocs.README));
        assertThat(docsCommand("--check", root.toString())).startsWith("0 ");
    }

    /** The exit code, a space, and what the command printed. */
    private static String docsCommand(String... args) {
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        List<String> command = new ArrayList<>(List.of("components"));
        command.addAll(List.of(args));
        int exit = ComponentDocs.run(command, new PrintStream(printed, true, StandardCharsets.UTF_8));
        return exit + " " + printed.toString(StandardCharsets.UTF_8);
    }

    private static String part(String doc, ComponentDocs.Part part) {
        int start = doc.indexOf(part.start());
        int end = doc.indexOf(part.end());
        assertThat(start).as("the doc's " + part.start().strip() + " marker").isNotNegative();
        assertThat(end).as("the doc's " + part.end().strip() + " marker").isGreaterThan(start);
        return doc.substring(start, end);
    }

    private static List<String> rowNames(String table) {
        List<String> names = new ArrayList<>();
        Matcher row = ROW_NAME.matcher(table);
        while (row.find()) {
            names.add(row.group(1));
        }
        return names;
    }

    private static List<String> names(JsonNode options) {
        List<String> names = new ArrayList<>();
        options.properties().forEach(option -> names.add(option.getKey()));
        return names;
    }
}
