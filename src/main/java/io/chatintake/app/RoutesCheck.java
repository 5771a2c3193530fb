package io.chatintake.app;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Settings;
import org.apache.camel.BindToRegistry;
import org.apache.camel.CamelContext;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.catalog.CamelCatalog;
import org.apache.camel.catalog.DefaultCamelCatalog;
import org.apache.camel.catalog.EndpointValidationResult;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.model.FromDefinition;
import org.apache.camel.model.ModelCamelContext;
import org.apache.camel.model.ProcessorDefinitionHelper;
import org.apache.camel.model.RouteDefinition;
import org.apache.camel.model.SendDefinition;
import org.apache.camel.spi.PropertiesSource;
import org.apache.camel.support.PluginHelper;
import org.apache.camel.support.ResourceHelper;
import org.snakeyaml.engine.v2.api.LoadSettings;
import org.snakeyaml.engine.v2.composer.Composer;
import org.snakeyaml.engine.v2.exceptions.Mark;
import org.snakeyaml.engine.v2.exceptions.MarkedYamlEngineException;
import org.snakeyaml.engine.v2.exceptions.YamlEngineException;
import org.snakeyaml.engine.v2.nodes.MappingNode;
import org.snakeyaml.engine.v2.nodes.Node;
import org.snakeyaml.engine.v2.nodes.NodeTuple;
import org.snakeyaml.engine.v2.nodes.ScalarNode;
import org.snakeyaml.engine.v2.nodes.SequenceNode;
import org.snakeyaml.engine.v2.parser.ParserImpl;
import org.snakeyaml.engine.v2.scanner.StreamReader;

/**
 * {@code routes check [FILE|DIR]}: what would go wrong when route files are loaded, found without
 * loading them into a running intake, each as {@code file:line: message}: YAML that does not
 * parse, Java that does not compile, unknown components, endpoint options unknown or of the wrong
 * type (Camel's catalog, with the metadata of the components in this jar), {@code {{placeholders}}}
 * with no value, beans referenced but not bound, and {@code direct:} endpoints no route consumes.
 * A file is checked with the other route files of its directory, as the runner loads them all.
 */
final class RoutesCheck {
    /** One problem, where it is. */
    record Problem(Path file, int line, String message) {
        @Override
        public String toString() {
            return file + ":" + line + ": " + message;
        }
    }

    /** An endpoint URI in a route file, with its {@code parameters} map when the DSL gives one. */
    private record Endpoint(Path file, int line, String uri, Map<String, String> parameters, Map<String, Integer> parameterLines,
                            boolean consumer) {
        Endpoint(Path file, int line, String uri, boolean consumer) {
            this(file, line, uri, Map.of(), Map.of(), consumer);
        }

        /** Where an option is written: its own line in a parameters map, else the URI's. */
        int lineOf(Object option) {
            return parameterLines.getOrDefault(String.valueOf(option), line);
        }

        String scheme() {
            int colon = uri.indexOf(':');
            return colon < 0 ? uri : uri.substring(0, colon);
        }

        /** {@code direct:name} without options. */
        String directName() {
            String rest = uri.substring(uri.indexOf(':') + 1);
            int query = rest.indexOf('?');
            return query < 0 ? rest : rest.substring(0, query);
        }
    }

    /** What one file holds: endpoints, beans it defines and references, placeholders, and its own problems. */
    private static final class Scan {
        final List<Endpoint> endpoints = new ArrayList<>();
        final Set<String> definedBeans = new LinkedHashSet<>();
        final Map<String, Integer> beanRefs = new LinkedHashMap<>();
        final List<Problem> problems = new ArrayList<>();
    }

    private static final Pattern PLACEHOLDER = Pattern.compile("\\{\\{(.+?)}}");
    /** Keys whose scalar value is an endpoint URI (a step's short form, {@code - to: "direct:x"}). */
    private static final Set<String> URI_STEPS = Set.of("to", "toD", "wireTap", "enrich", "pollEnrich", "from");
    private static final String COMPONENT_SERVICES = "META-INF/services/org/apache/camel/component/";

    private final Function<String, Optional<String>> property;
    private final Predicate<String> bound;
    private final CamelCatalog catalog = new DefaultCamelCatalog(true);

    /**
     * @param property a configuration key's value (file, environment), empty when it has none
     * @param bound    whether a bean name is bound by the application (beans route files define are added)
     */
    RoutesCheck(Function<String, Optional<String>> property, Predicate<String> bound) {
        this.property = property;
        this.bound = bound;
    }

    /**
     * The check as {@code java -jar chat-intake.jar routes check} runs it: values from the
     * configuration file (else the jar's built-in one) and the environment, the beans the
     * application binds ({@link CamelConfiguration}'s). Prints each problem; 1 when there is any.
     */
    static int run(Path target, Path configFile, Map<String, String> env, PrintStream out) throws IOException {
        if (!Files.exists(target)) {
            throw new ConfigurationException("routes check: " + target + " does not exist");
        }
        Properties values = new Properties();
        try (InputStream defaults = RoutesCheck.class.getClassLoader().getResourceAsStream("application.properties")) {
            if (defaults != null) {
                values.load(defaults);
            }
        }
        if (Files.isRegularFile(configFile)) {
            try (java.io.Reader reader = Files.newBufferedReader(configFile, StandardCharsets.UTF_8)) {
                values.load(reader);
            }
        }
        Function<String, Optional<String>> property = key -> Optional.ofNullable(env.get(Settings.envName(key)))
                .or(() -> Optional.ofNullable(env.get(key))).or(() -> Optional.ofNullable(System.getProperty(key)))
                .or(() -> Optional.ofNullable(values.getProperty(key)));
        Set<String> applicationBeans = new TreeSet<>();
        for (Method method : CamelConfiguration.class.getMethods()) {
            BindToRegistry binding = method.getAnnotation(BindToRegistry.class);
            if (binding != null) {
                applicationBeans.add(binding.value().isEmpty() ? method.getName() : binding.value());
            }
        }
        List<Problem> problems = new RoutesCheck(property, applicationBeans::contains).check(target);
        problems.forEach(out::println);
        int files = Files.isDirectory(target) ? routeFiles(target).size() : 1;
        out.println("routes check: " + files + " file(s), " + (problems.isEmpty() ? "no problems" : problems.size() + " problem(s)"));
        return problems.isEmpty() ? 0 : 1;
    }

    /** The problems of a file (checked with its directory's other route files) or of every route file of a directory. */
    List<Problem> check(Path fileOrDir) throws IOException {
        Path dir = Files.isDirectory(fileOrDir) ? fileOrDir : fileOrDir.toAbsolutePath().getParent();
        List<Path> files = routeFiles(dir);
        if (!Files.isDirectory(fileOrDir) && !files.contains(fileOrDir.toAbsolutePath().normalize())) {
            files.add(fileOrDir.toAbsolutePath().normalize());
        }
        Path only = Files.isDirectory(fileOrDir) ? null : fileOrDir.toAbsolutePath().normalize();
        return check(files, only, path -> Files.readString(path));
    }

    /** The problems of {@code file} were its content {@code content}, the other route files of its directory as they are. */
    List<Problem> check(Path file, String content) throws IOException {
        Path target = file.toAbsolutePath().normalize();
        List<Path> files = routeFiles(target.getParent());
        if (!files.contains(target)) {
            files.add(target);
        }
        return check(files, target, path -> path.equals(target) ? content : Files.readString(path));
    }

    @FunctionalInterface
    private interface Reader {
        String read(Path file) throws IOException;
    }

    private List<Problem> check(List<Path> files, Path only, Reader reader) throws IOException {
        Map<Path, Scan> scans = new LinkedHashMap<>();
        for (Path file : files) {
            String text = reader.read(file);
            scans.put(file, file.toString().endsWith(".java") ? scanJava(file, text) : scanYaml(file, text));
        }
        Set<String> defined = new TreeSet<>();
        Set<String> consumed = new TreeSet<>();
        scans.values().forEach(scan -> {
            defined.addAll(scan.definedBeans);
            scan.endpoints.stream().filter(e -> e.consumer() && e.scheme().equals("direct")).forEach(e -> consumed.add(e.directName()));
        });
        List<Problem> problems = new ArrayList<>();
        scans.forEach((file, scan) -> {
            if (only != null && !file.equals(only)) {
                return;
            }
            problems.addAll(scan.problems);
            scan.beanRefs.forEach((name, line) -> {
                if (!defined.contains(name) && !bound.test(name)) {
                    problems.add(new Problem(file, line, "bean '" + name + "' is not bound (neither a bean of the application nor"
                            + " defined in a beans: section)"));
                }
            });
            for (Endpoint endpoint : scan.endpoints) {
                problems.addAll(validate(endpoint));
                if (!endpoint.consumer() && endpoint.scheme().equals("direct") && !consumed.contains(endpoint.directName())) {
                    problems.add(new Problem(file, endpoint.line(), "direct:" + endpoint.directName() + ": no route consumes it"));
                }
            }
        });
        problems.sort(Comparator.comparing((Problem p) -> p.file().toString()).thenComparingInt(Problem::line));
        return problems;
    }

    /** The route files of a directory: {@code *.yaml}, {@code *.yml}, {@code *.java}, as the runner loads them. */
    static List<Path> routeFiles(Path dir) throws IOException {
        try (Stream<Path> listing = Files.list(dir)) {
            return new ArrayList<>(listing.filter(f -> f.toString().matches(".*\\.(yaml|yml|java)$") && Files.isRegularFile(f))
                    .filter(f -> !f.getFileName().toString().startsWith(".."))
                    .map(f -> f.toAbsolutePath().normalize()).sorted().toList());
        }
    }

    private Scan scanYaml(Path file, String text) {
        Scan scan = new Scan();
        List<Node> documents = new ArrayList<>();
        try {
            LoadSettings settings = LoadSettings.builder().setLabel(file.toString()).build();
            Composer composer = new Composer(settings, new ParserImpl(settings, new StreamReader(settings, text)));
            while (composer.hasNext()) {
                documents.add(composer.next());
            }
        } catch (MarkedYamlEngineException e) {
            int line = e.getProblemMark().or(e::getContextMark).map(m -> m.getLine() + 1).orElse(1);
            scan.problems.add(new Problem(file, line, "YAML syntax: " + e.getProblem()));
            return scan;
        } catch (YamlEngineException e) {
            scan.problems.add(new Problem(file, 1, "YAML syntax: " + firstLine(e.getMessage())));
            return scan;
        }
        documents.forEach(document -> walk(file, document, null, Set.of(), scan));
        try (CamelContext context = checkContext()) {
            for (RoutesBuilder builder : PluginHelper.getRoutesLoader(context).findRoutesBuilders(ResourceHelper.fromString("file:" + file, text))) {
                context.addRoutes(builder);
            }
        } catch (Exception e) {
            scan.problems.add(new Problem(file, markedLine(e), "does not load: " + RouteFilesLoader.firstError(e)));
        }
        return scan;
    }

    /**
     * Every mapping, sequence and scalar of a YAML route file, with the key it is the value of;
     * inside a {@code routeTemplate}, its parameters are placeholders that have a value.
     */
    private void walk(Path file, Node node, String key, Set<String> templateParameters, Scan scan) {
        if (node instanceof ScalarNode scalar) {
            scalar(file, line(node), key, scalar.getValue(), templateParameters, scan);
        } else if (node instanceof SequenceNode sequence) {
            sequence.getValue().forEach(item -> walk(file, item, key, templateParameters, scan));
        } else if (node instanceof MappingNode mapping) {
            Map<String, Node> entries = new LinkedHashMap<>();
            for (NodeTuple tuple : mapping.getValue()) {
                if (tuple.getKeyNode() instanceof ScalarNode k) {
                    entries.put(k.getValue(), tuple.getValueNode());
                }
            }
            Set<String> inTemplate = "routeTemplate".equals(key) ? templateParameters(entries.get("parameters")) : templateParameters;
            if ("beans".equals(key) && entries.get("name") instanceof ScalarNode name) {
                scan.definedBeans.add(name.getValue());
            }
            Node uri = entries.get("uri");
            if (uri instanceof ScalarNode u) {
                Map<String, String> parameters = new LinkedHashMap<>();
                Map<String, Integer> lines = new LinkedHashMap<>();
                if (entries.get("parameters") instanceof MappingNode map) {
                    for (NodeTuple tuple : map.getValue()) {
                        if (tuple.getKeyNode() instanceof ScalarNode k && tuple.getValueNode() instanceof ScalarNode v) {
                            parameters.put(k.getValue(), v.getValue());
                            lines.put(k.getValue(), line(k));
                        }
                    }
                }
                scan.endpoints.add(new Endpoint(file, line(uri), u.getValue(), parameters, lines, "from".equals(key)));
            }
            entries.forEach((k, value) -> {
                if (!(k.equals("uri") && value instanceof ScalarNode)) {
                    walk(file, value, k, inTemplate, scan);
                }
            });
        }
    }

    /** The names a route template declares: {@code parameters: [{name: bot}, ...]}. */
    private static Set<String> templateParameters(Node declared) {
        Set<String> names = new TreeSet<>();
        if (declared instanceof SequenceNode sequence) {
            for (Node item : sequence.getValue()) {
                if (item instanceof MappingNode parameter) {
                    for (NodeTuple tuple : parameter.getValue()) {
                        if (tuple.getKeyNode() instanceof ScalarNode k && k.getValue().equals("name")
                                && tuple.getValueNode() instanceof ScalarNode v) {
                            names.add(v.getValue());
                        }
                    }
                }
            }
        }
        return names;
    }

    private void scalar(Path file, int line, String key, String value, Set<String> templateParameters, Scan scan) {
        Matcher placeholders = PLACEHOLDER.matcher(value);
        while (placeholders.find()) {
            if (!templateParameters.contains(placeholders.group(1))) {
                placeholder(placeholders.group(1)).ifPresent(missing -> scan.problems.add(new Problem(file, line, missing)));
            }
        }
        if (key != null && URI_STEPS.contains(key)) {
            scan.endpoints.add(new Endpoint(file, line, value, key.equals("from")));
        } else if ("ref".equals(key)) {
            scan.beanRefs.putIfAbsent(value, line);
        } else if (value.startsWith("#bean:")) {
            scan.beanRefs.putIfAbsent(value.substring("#bean:".length()), line);
        } else if (value.startsWith("#") && value.matches("#[A-Za-z_][\\w.-]*")) {
            scan.beanRefs.putIfAbsent(value.substring(1), line);
        }
    }

    /**
     * A Java DSL file compiled and its RouteBuilder run against a context that is never started:
     * its endpoints as defined (where it defines routes only when configured, only those).
     */
    private Scan scanJava(Path file, String text) {
        Scan scan = new Scan();
        Matcher placeholders = PLACEHOLDER.matcher(text);
        while (placeholders.find()) {
            int line = lineOf(text, placeholders.start());
            placeholder(placeholders.group(1)).ifPresent(missing -> scan.problems.add(new Problem(file, line, missing)));
        }
        try (CamelContext context = checkContext()) {
            Collection<RoutesBuilder> builders = PluginHelper.getRoutesLoader(context).findRoutesBuilders(
                    PluginHelper.getResourceLoader(context).resolveResource("file:" + file));
            for (RoutesBuilder builder : builders) {
                context.addRoutes(builder);
            }
            for (RouteDefinition route : ((ModelCamelContext) context).getRouteDefinitions()) {
                FromDefinition from = route.getInput();
                scan.endpoints.add(new Endpoint(file, Math.max(1, from.getLineNumber()), from.getEndpointUri(), true));
                for (SendDefinition<?> send : ProcessorDefinitionHelper.filterTypeInOutputs(route.getOutputs(), SendDefinition.class)) {
                    scan.endpoints.add(new Endpoint(file, Math.max(1, send.getLineNumber()), send.getEndpointUri(), false));
                }
            }
        } catch (Exception e) {
            String error = RouteFilesLoader.firstError(e);
            Matcher at = Pattern.compile(":(\\d+): error: (.*)").matcher(error);
            scan.problems.add(at.find() ? new Problem(file, Integer.parseInt(at.group(1)), "does not compile: " + at.group(2))
                    : new Problem(file, 1, "does not load: " + error));
        }
        return scan;
    }

    /** A context that is never started, reading this check's configuration, for loading a file through its DSL. */
    private CamelContext checkContext() {
        CamelContext context = new DefaultCamelContext(false);
        context.getPropertiesComponent().addPropertiesSource(new PropertiesSource() {
            @Override
            public String getName() {
                return "configuration";
            }

            @Override
            public String getProperty(String name) {
                return property.apply(name).orElse(null);
            }
        });
        context.setSourceLocationEnabled(true);
        return context;
    }

    /** Why a placeholder has no value, or empty when it has one (or a default). */
    private Optional<String> placeholder(String expression) {
        String body = expression.trim();
        boolean environment = body.startsWith("env:");
        if (environment || body.startsWith("sys:")) {
            body = body.substring(4);
        }
        int colon = body.indexOf(':');
        if (colon >= 0) {
            return Optional.empty(); // has a default
        }
        String key = body;
        boolean present = environment ? System.getenv(key) != null : property.apply(key).isPresent();
        return present ? Optional.empty() : Optional.of("placeholder {{" + expression + "}} has no value: set "
                + (environment ? "environment variable " + key : key + " in the configuration or " + Settings.envName(key))
                + ", or give it a default ({{" + expression + ":default}})");
    }

    private List<Problem> validate(Endpoint endpoint) {
        List<Problem> problems = new ArrayList<>();
        String scheme = endpoint.scheme();
        if (scheme.contains("{{") || endpoint.uri().startsWith("${")) {
            return problems;
        }
        if (!knownHere(scheme)) {
            problems.add(new Problem(endpoint.file(), endpoint.line(), catalog.findComponentNames().contains(scheme)
                    ? "component '" + scheme + "' is not in this jar (add org.apache.camel:camel-" + scheme + ")"
                    : "unknown component '" + scheme + "'"));
            return problems;
        }
        String uri = resolved(endpoint.uri());
        StringBuilder full = new StringBuilder(uri);
        endpoint.parameters().forEach((name, value) -> {
            full.append(full.indexOf("?") < 0 ? '?' : '&').append(name).append('=')
                    .append(URLEncoder.encode(resolved(value), StandardCharsets.UTF_8));
        });
        EndpointValidationResult result;
        try {
            result = catalog.validateEndpointProperties(full.toString(), false, endpoint.consumer(), !endpoint.consumer());
        } catch (RuntimeException e) {
            problems.add(new Problem(endpoint.file(), endpoint.line(), endpoint.uri() + ": " + firstLine(e.getMessage())));
            return problems;
        }
        String where = scheme + ":";
        if (result.getSyntaxError() != null) {
            problems.add(new Problem(endpoint.file(), endpoint.line(), where + " " + result.getSyntaxError()));
        }
        for (Object unknown : result.getUnknown() == null ? Set.of() : result.getUnknown()) {
            String[] suggestions = result.getUnknownSuggestions() == null ? null : (String[]) result.getUnknownSuggestions().get(unknown);
            problems.add(new Problem(endpoint.file(), endpoint.lineOf(unknown), where + " unknown option '" + unknown + "'"
                    + (suggestions == null || suggestions.length == 0 ? "" : " (did you mean " + String.join(", ", suggestions) + "?)")));
        }
        invalid(problems, endpoint, where, result.getInvalidInteger(), "an integer");
        invalid(problems, endpoint, where, result.getInvalidNumber(), "a number");
        invalid(problems, endpoint, where, result.getInvalidBoolean(), "true or false");
        invalid(problems, endpoint, where, result.getInvalidDuration(), "a duration");
        invalid(problems, endpoint, where, result.getInvalidEnum(), "one of its choices");
        invalid(problems, endpoint, where, result.getInvalidReference(), "a #bean reference");
        if (result.getRequired() != null) {
            for (Object required : result.getRequired()) {
                problems.add(new Problem(endpoint.file(), endpoint.lineOf(required), where + " option '" + required + "' is required"));
            }
        }
        return problems;
    }

    private static void invalid(List<Problem> problems, Endpoint endpoint, String where, Map<?, ?> invalid, String expected) {
        if (invalid != null) {
            invalid.forEach((name, value) -> problems.add(new Problem(endpoint.file(), endpoint.lineOf(name),
                    where + " option '" + name + "' must be " + expected + ", got '" + value + "'")));
        }
    }

    /** The placeholders of a value replaced by their values (or defaults); one with neither stays as written. */
    private String resolved(String value) {
        Matcher m = PLACEHOLDER.matcher(value);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String expression = m.group(1).trim();
            String body = expression.startsWith("env:") || expression.startsWith("sys:") ? expression.substring(4) : expression;
            int colon = body.indexOf(':');
            String key = colon < 0 ? body : body.substring(0, colon);
            Optional<String> found = expression.startsWith("env:") ? Optional.ofNullable(System.getenv(key)) : property.apply(key);
            String replacement = found.orElse(colon < 0 ? m.group() : body.substring(colon + 1));
            m.appendReplacement(out, Matcher.quoteReplacement(replacement));
        }
        m.appendTail(out);
        return out.toString();
    }

    /** A component this jar has; one not in Camel's catalog (ours, a third party's) is added with the metadata it ships. */
    private boolean knownHere(String scheme) {
        ClassLoader loader = RoutesCheck.class.getClassLoader();
        Properties service = new Properties();
        try (InputStream in = loader.getResourceAsStream(COMPONENT_SERVICES + scheme)) {
            if (in == null) {
                return false;
            }
            service.load(in);
        } catch (IOException e) {
            return false;
        }
        if (catalog.componentJSonSchema(scheme) == null) {
            String className = service.getProperty("class", "");
            String json = "META-INF/" + className.substring(0, Math.max(0, className.lastIndexOf('.'))).replace('.', '/') + "/" + scheme + ".json";
            try (InputStream in = loader.getResourceAsStream(json)) {
                if (in != null) {
                    catalog.addComponent(scheme, className, new String(in.readAllBytes(), StandardCharsets.UTF_8));
                }
            } catch (IOException e) {
                return true; // present, options unchecked
            }
        }
        return true;
    }

    /** The line the YAML DSL marked in its exception (an unknown step, a wrong type), else 1. */
    private static int markedLine(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof MarkedYamlEngineException marked) {
                Optional<Mark> mark = marked.getProblemMark().or(marked::getContextMark);
                if (mark.isPresent()) {
                    return mark.get().getLine() + 1;
                }
            }
        }
        return 1;
    }

    private static int line(Node node) {
        return node.getStartMark().map(Mark::getLine).map(l -> l + 1).orElse(1);
    }

    private static int lineOf(String text, int offset) {
        int line = 1;
        for (int i = 0; i < offset; i++) {
            if (text.charAt(i) == '\n') {
                line++;
            }
        }
        return line;
    }

    private static String firstLine(String text) {
        return text == null ? "" : text.split("\\R")[0];
    }
}
