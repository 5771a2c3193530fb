package io.chatintake.ops;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.chatintake.config.ConfigurationException;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Predicate;
import java.util.jar.JarFile;
import java.util.stream.Stream;

/**
 * {@code docs components}: the generated parts of each component's reference,
 * {@code src/main/docs/<scheme>-component.adoc}, rendered from the Camel metadata that
 * camel-component-maven-plugin writes into the build (the same JSON Camel's tooling reads). Each part
 * sits between {@code // <part>: START} and {@code // <part>: END} lines, as in Camel's own component
 * docs; the text around them is written by hand and kept. The README's list of every component's
 * headers is generated the same way. {@code --check} changes nothing and exits 1 when a file differs. Run from the repository root after a package: {@value #COMMAND}.
 */
public final class ComponentDocs {
    public static final String COMMAND = "java -jar target/chat-intake.jar docs components";
    public static final Path DOCS = Path.of("src/main/docs");
    public static final Path README = Path.of("README.md");
    public static final String README_START = "<!-- component headers: START -->\n";
    public static final String README_END = "<!-- component headers: END -->\n";
    /** Where the plugin writes each component's JSON: META-INF/ plus the component's package. */
    private static final String METADATA_ROOT = "META-INF/io/chatintake/";
    private static final String TABLE_HEAD = "[width=\"100%\",cols=\"2,5,^1,2\",options=\"header\"]\n|===\n| Name | Description | Default | Type\n";
    private static final ObjectMapper JSON = new ObjectMapper();

    /** The generated parts of a component doc, by marker name. */
    public enum Part {
        COMPONENT_OPTIONS("component options"), ENDPOINT_OPTIONS("endpoint options"), HEADERS("component headers");

        private final String marker;

        Part(String marker) {
            this.marker = marker;
        }

        public String start() {
            return "// " + marker + ": START\n";
        }

        public String end() {
            return "// " + marker + ": END\n";
        }
    }

    private ComponentDocs() {
    }

    /** {@code docs components [--check] [ROOT]}: ROOT is the repository root (default: the working directory). */
    public static int run(List<String> args, PrintStream out) {
        if (args.isEmpty() || !args.get(0).equals("components") || args.size() > 3) {
            throw new ConfigurationException("usage: docs components [--check] [ROOT] (the repository root, default .)");
        }
        boolean check = args.contains("--check");
        Path root = args.stream().skip(1).filter(Predicate.not("--check"::equals)).findFirst().map(Path::of).orElse(Path.of("."));
        if (!Files.isDirectory(root.resolve(DOCS)) || !Files.isRegularFile(root.resolve(README))) {
            throw new ConfigurationException("docs components: run it from the repository root (needs " + DOCS + "/ and " + README + ")");
        }
        Map<String, JsonNode> components = metadata();
        Map<Path, String> expected = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> component : components.entrySet()) {
            Path doc = root.resolve(DOCS).resolve(fileName(component.getKey()));
            expected.put(doc, update(read(doc), component.getValue()));
        }
        expected.put(root.resolve(README), updateReadme(read(root.resolve(README)), components));
        List<String> stale = new ArrayList<>();
        expected.forEach((file, text) -> {
            if (!text.equals(read(file))) {
                stale.add(file.toString());
                if (!check) {
                    write(file, text);
                    out.println("docs components: " + file + " updated");
                }
            }
        });
        if (check && !stale.isEmpty()) {
            out.println("docs components: " + String.join(", ", stale) + " differ from the component metadata; run " + COMMAND);
            return 1;
        }
        if (stale.isEmpty()) {
            out.println("docs components: the component docs and the README's header list match the component metadata");
        }
        return 0;
    }

    /**
     * The README's list of every component's headers, between {@value #README_START} and
     * {@value #README_END}; a README without those markers is returned as it is.
     */
    public static String updateReadme(String readme, Map<String, JsonNode> components) {
        int start = readme.indexOf(README_START);
        int end = readme.indexOf(README_END, Math.max(start, 0));
        if (start < 0 || end < 0) {
            return readme;
        }
        StringBuilder list = new StringBuilder("| component | headers |\n|---|---|\n");
        components.forEach((scheme, metadata) -> {
            List<String> names = new ArrayList<>();
            metadata.path("headers").properties().forEach(h -> names.add("`" + h.getKey() + "`"));
            list.append("| [").append(scheme).append("](").append(DOCS.resolve(fileName(scheme)).toString().replace('\\', '/'))
                    .append(") | ").append(String.join(", ", names)).append(" |\n");
        });
        return readme.substring(0, start + README_START.length()) + list + readme.substring(end);
    }

    public static String fileName(String scheme) {
        return scheme + "-component.adoc";
    }

    /**
     * A doc with each generated part rendered anew from the metadata; a new doc (empty text) gets a
     * title and every part. A part whose markers are missing is appended with them.
     */
    public static String update(String doc, JsonNode metadata) {
        String text = doc.isEmpty() ? skeleton(metadata.path("component")) : doc;
        for (Part part : Part.values()) {
            String body = render(part, metadata);
            int start = text.indexOf(part.start());
            int end = text.indexOf(part.end(), Math.max(start, 0));
            if (start < 0 || end < 0) {
                text = text + (text.endsWith("\n\n") ? "" : "\n") + part.start() + body + part.end();
            } else {
                text = text.substring(0, start + part.start().length()) + body + text.substring(end);
            }
        }
        return text;
    }

    /** One generated part, without its markers. */
    public static String render(Part part, JsonNode metadata) {
        JsonNode component = metadata.path("component");
        String title = component.path("title").asText();
        return switch (part) {
            case COMPONENT_OPTIONS -> {
                JsonNode options = metadata.path("componentProperties");
                yield "The " + title + " component supports " + options.size() + " options, which are listed below.\n\n"
                        + table(options, false);
            }
            case ENDPOINT_OPTIONS -> {
                List<Map.Entry<String, JsonNode>> path = new ArrayList<>();
                List<Map.Entry<String, JsonNode>> query = new ArrayList<>();
                metadata.path("properties").properties().forEach(o -> ("path".equals(o.getValue().path("kind").asText()) ? path : query).add(o));
                yield "The " + title + " endpoint is configured using URI syntax:\n\n----\n" + component.path("syntax").asText()
                        + "\n----\n\nwith the following path and query parameters:\n\n"
                        + "==== Path Parameters (" + path.size() + " parameters)\n\n" + table(path, false)
                        + "\n==== Query Parameters (" + query.size() + " parameters)\n\n" + table(query, false);
            }
            case HEADERS -> {
                JsonNode headers = metadata.path("headers");
                yield "The " + title + " component supports " + headers.size()
                        + " message header(s), which is/are listed below:\n\n" + table(headers, true);
            }
        };
    }

    /** Every component of this jar, by scheme: the JSON files the plugin generated, found where this class was loaded from. */
    public static Map<String, JsonNode> metadata() {
        Map<String, JsonNode> components = new TreeMap<>();
        for (String resource : metadataResources()) {
            try (InputStream in = ComponentDocs.class.getClassLoader().getResourceAsStream(resource)) {
                JsonNode json = JSON.readTree(in);
                components.put(json.path("component").path("scheme").asText(), json);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        if (components.isEmpty()) {
            throw new ConfigurationException("docs components: no component metadata under " + METADATA_ROOT + " (build first)");
        }
        return components;
    }

    private static List<String> metadataResources() {
        try {
            Path from = Path.of(ComponentDocs.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            if (Files.isDirectory(from)) {
                try (Stream<Path> files = Files.walk(from.resolve(METADATA_ROOT))) {
                    return files.filter(f -> f.toString().endsWith(".json")).map(f -> from.relativize(f).toString().replace('\\', '/'))
                            .sorted().toList();
                }
            }
            try (JarFile jar = new JarFile(from.toFile())) {
                return jar.stream().map(e -> e.getName()).filter(n -> n.startsWith(METADATA_ROOT) && n.endsWith(".json")).sorted().toList();
            }
        } catch (IOException | URISyntaxException e) {
            throw new ConfigurationException("docs components: cannot list the component metadata: " + e.getMessage(), e);
        }
    }

    /** A new doc: Camel's title and attributes, the URI format, and a section for each generated part. */
    private static String skeleton(JsonNode component) {
        String title = component.path("title").asText();
        return "= " + title + " Component\n"
                + ":doctitle: " + title + "\n"
                + ":shortname: " + component.path("scheme").asText() + "\n"
                + ":description: " + component.path("description").asText() + "\n"
                + ":since: " + component.path("firstVersion").asText() + "\n"
                + ":supportlevel: " + component.path("supportLevel").asText() + "\n\n"
                + "*Since chat-intake {since}*\n\n" + component.path("description").asText() + "\n\n"
                + "== URI format\n\n----\n" + component.path("syntax").asText() + "\n----\n\n"
                + "== Configuring Options\n\n=== Component Options\n\n" + Part.COMPONENT_OPTIONS.start() + Part.COMPONENT_OPTIONS.end()
                + "\n=== Endpoint Options\n\n" + Part.ENDPOINT_OPTIONS.start() + Part.ENDPOINT_OPTIONS.end()
                + "\n== Message Headers\n\n" + Part.HEADERS.start() + Part.HEADERS.end();
    }

    private static String table(JsonNode options, boolean headers) {
        List<Map.Entry<String, JsonNode>> rows = new ArrayList<>();
        options.properties().forEach(rows::add);
        return table(rows, headers);
    }

    private static String table(List<Map.Entry<String, JsonNode>> rows, boolean headers) {
        StringBuilder out = new StringBuilder(TABLE_HEAD);
        for (Map.Entry<String, JsonNode> row : rows) {
            JsonNode option = row.getValue();
            String group = option.path("group").asText();
            out.append("| *").append(row.getKey()).append('*').append(group.isEmpty() ? "" : " (" + group + ")")
                    .append(" | ").append(option.path("required").asBoolean() ? "*Required* " : "")
                    .append(option.path("secret").asBoolean() ? "*Secret* " : "")
                    .append(cell(option.path("description").asText()))
                    .append(headers ? constant(option) : enumValues(option))
                    .append(" | ").append(cell(option.has("defaultValue") ? option.path("defaultValue").asText() : ""))
                    .append(" | ").append(cell(shortType(option.path("javaType").asText()))).append('\n');
        }
        return out.append("|===\n").toString();
    }

    private static String constant(JsonNode header) {
        String constant = header.path("constantName").asText();
        return constant.isEmpty() ? "" : ". Constant: `" + constant.substring(constant.lastIndexOf('.') + 1) + "`";
    }

    private static String enumValues(JsonNode option) {
        if (!option.has("enum")) {
            return "";
        }
        List<String> values = new ArrayList<>();
        option.path("enum").forEach(v -> values.add(v.asText()));
        return " One of: " + cell(String.join(", ", values)) + ".";
    }

    /** A table cell: one line, its pipes escaped. */
    private static String cell(String text) {
        return text.replace("\r", "").replace('\n', ' ').replace("|", "\\|").strip();
    }

    /** java.util.List<java.lang.String> reads List<String>. */
    private static String shortType(String javaType) {
        return javaType.replaceAll("\\b[a-z][\\w]*\\.(?=[\\w.]*[A-Z])", "");
    }

    private static String read(Path doc) {
        try {
            return Files.isRegularFile(doc) ? Files.readString(doc, StandardCharsets.UTF_8) : "";
        } catch (IOException e) {
            throw new ConfigurationException("docs components: cannot read " + doc + ": " + e.getMessage(), e);
        }
    }

    private static void write(Path doc, String text) {
        try {
            Files.writeString(doc, text, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new ConfigurationException("docs components: cannot write " + doc + ": " + e.getMessage(), e);
        }
    }
}
