package io.chatintake.channel;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.snakeyaml.engine.v2.api.Load;
import org.snakeyaml.engine.v2.api.LoadSettings;

/**
 * The Camel metadata the build generates for telegram-inbox, telegram-bot, webhook-inbox and work (the
 * component JSON Camel's tooling reads) lists every option and header the shipped routes use.
 */
class ComponentMetadataTest {
    private static final Map<String, String> COMPONENTS = Map.of(
            "telegram-inbox", "META-INF/io/chatintake/channel/telegram/telegram-inbox.json",
            "telegram-bot", "META-INF/io/chatintake/channel/telegram/telegram-bot.json",
            "webhook-inbox", "META-INF/io/chatintake/channel/webhook/webhook-inbox.json",
            "work", "META-INF/io/chatintake/work/component/work.json");
    /** Each component's headers start with one prefix; album and effect headers are not a component's. */
    private static final Map<String, String> PREFIXES = Map.of("telegram-inbox", "ChatIntakeTelegram", "telegram-bot",
            "ChatIntakeTelegram", "webhook-inbox", "ChatIntakeWebhook", "work", "ChatIntakeWork");
    private static final Pattern OUR_HEADER = Pattern.compile(
            "(?:\\$\\{header\\.|header:|name:\\s*|[hH]eader\\(\")(ChatIntake(?:Telegram|Webhook|Work)[A-Z]\\w*)");

    @Test
    void everyOptionTheShippedRoutesUseIsInItsComponentsJson() throws Exception {
        List<String> checked = new ArrayList<>();
        for (Path file : routeFiles("yaml")) {
            for (Object document : new Load(LoadSettings.builder().build()).loadAllFromString(Files.readString(file))) {
                endpoints(document, (uri, options) -> {
                    String scheme = uri.substring(0, Math.max(0, uri.indexOf(':')));
                    if (COMPONENTS.containsKey(scheme)) {
                        Set<String> known = json(scheme).path("properties").properties().stream().map(Map.Entry::getKey)
                                .collect(TreeSet::new, Set::add, Set::addAll);
                        assertThat(known).as(file + ": " + uri).containsAll(options);
                        checked.add(uri);
                    }
                });
            }
        }
        assertThat(checked).as("the shipped routes use all three components")
                .anyMatch(u -> u.startsWith("telegram-inbox:")).anyMatch(u -> u.startsWith("telegram-bot:"))
                .anyMatch(u -> u.startsWith("webhook-inbox:"));
    }

    @Test
    void everyHeaderOfTheseComponentsTheShippedRoutesUseIsDocumented() throws Exception {
        Set<String> documented = new TreeSet<>();
        for (String scheme : COMPONENTS.keySet()) {
            json(scheme).path("headers").properties().forEach(header -> documented.add(header.getKey()));
        }
        Set<String> used = new TreeSet<>();
        for (Path file : routeFiles("yaml|java")) {
            String text = Files.readString(file).lines().filter(line -> !line.trim().startsWith("#") && !line.trim().startsWith("//"))
                    .reduce("", (a, b) -> a + "\n" + b);
            Matcher header = OUR_HEADER.matcher(text);
            while (header.find()) {
                used.add(header.group(1));
            }
        }
        assertThat(used).as("headers the routes use")
                .contains("ChatIntakeTelegramChatId", "ChatIntakeTelegramText", "ChatIntakeWebhookEventId", "ChatIntakeWorkItemId");
        assertThat(documented).containsAll(used);
    }

    @Test
    void eachComponentsHeadersShareOnePrefix() {
        PREFIXES.forEach((scheme, prefix) -> assertThat(json(scheme).path("headers").properties())
                .as(scheme + " headers").isNotEmpty()
                .allSatisfy(header -> assertThat(header.getKey()).startsWith(prefix)));
    }

    @Test
    void optionsCarryDescriptionsAndTheMappingOptionsTheirLabel() throws Exception {
        JsonNode webhook = json("webhook-inbox").path("properties");
        for (String mapping : List.of("events", "eventId", "eventType", "provider", "account", "occurredAt", "conversation",
                "messageId", "messageType", "text", "caption", "attachments", "sentAt", "albumId", "albumIndex", "albumTotal",
                "messageEvents", "contentEvents", "deleteEvents")) {
            assertThat(webhook.path(mapping).path("label").asText()).as(mapping).isEqualTo("mapping");
        }
        for (String scheme : COMPONENTS.keySet()) {
            json(scheme).path("properties").properties().forEach(option ->
                    assertThat(option.getValue().path("description").asText()).as(scheme + " " + option.getKey()).isNotBlank());
        }
        assertThat(json("telegram-inbox").path("properties").path("limit").path("defaultValue").asInt()).isEqualTo(100);
        assertThat(json("telegram-inbox").path("properties").path("token").path("secret").asBoolean()).isTrue();
    }

    private interface EndpointVisitor {
        void visit(String uri, Set<String> options);
    }

    /** Every {@code uri} (with its {@code parameters} and query options) and short {@code to:} in a YAML document. */
    @SuppressWarnings("unchecked")
    private static void endpoints(Object node, EndpointVisitor visitor) {
        if (node instanceof List<?> list) {
            list.forEach(item -> endpoints(item, visitor));
        } else if (node instanceof Map<?, ?> map) {
            Object uri = map.get("uri");
            if (uri instanceof String u) {
                Set<String> options = new TreeSet<>();
                if (map.get("parameters") instanceof Map<?, ?> parameters) {
                    parameters.keySet().forEach(key -> options.add(key.toString()));
                }
                if (u.contains("?")) {
                    for (String pair : u.substring(u.indexOf('?') + 1).split("&")) {
                        options.add(pair.split("=")[0]);
                    }
                }
                visitor.visit(u, options);
            }
            if (map.get("to") instanceof String to) {
                endpoints(Map.of("uri", to), visitor);
            }
            ((Map<Object, Object>) map).forEach((key, value) -> {
                if (!"uri".equals(key)) {
                    endpoints(value, visitor);
                }
            });
        }
    }

    private static List<Path> routeFiles(String extensions) throws Exception {
        try (Stream<Path> files = Files.list(Path.of("routes"))) {
            return files.filter(f -> f.getFileName().toString().matches(".*\\.(" + extensions + ")$")).sorted().toList();
        }
    }

    private static JsonNode json(String scheme) {
        try (InputStream in = ComponentMetadataTest.class.getClassLoader().getResourceAsStream(COMPONENTS.get(scheme))) {
            assertThat(in).as("generated " + COMPONENTS.get(scheme)).isNotNull();
            return new ObjectMapper().readTree(in);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
