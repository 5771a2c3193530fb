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
import org.apache.camel.model.PolicyDefinition;
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
 * It knows the flow of work: a kind queued ({@code to: "work:<kind>"}, a webhook-inbox's
 * {@code workKind}) that no route consumes ({@code from: "work:<kind>"}) is a problem; a kind consumed
 * that nothing queues, and a {@code telegram-bot:} or {@code http(s):} call run as work outside a
 * {@code guardedEffect} policy, are warnings (printed, never failing the check).
 * A file is checked with the other route files of its directory, as the runner loads them all.
 */
final class RoutesCheck {
    /**
     * One problem, or a warning, where it is. A problem of the flow (a kind queued that no route
     * consumes) is a problem of the set of files, not of the file a reload brings: it fails the
     * check, not a reload.
     */
    record Problem(Path file, int line, String message, boolean warning, boolean ofTheFlow) {
        Problem(Path file, int line, String message) {
            this(file, line, message, false, false);
        }

        static Problem warning(Path file, int line, String message) {
            return new Problem(file, line, message, true, true);
        }

        static Problem ofTheFlow(Path file, int line, String message) {
            return new Problem(file, line, message, false, true);
        }

        /** Whether a reload of the file is refused for it. */
        boolean refusesReload() {
            return !warning && !ofTheFlow;
        }

        @Override
        public String toString() {
            return file + ":" + line + ": " + (warning ? "warning: " : "") + message;
        }
    }

    /** A route of a file: its input, and what it sends to, each inside a {@code guardedEffect} policy or not. */
    private static final class RouteScope {
        Endpoint from;
        final List<Endpoint> sends = new ArrayList<>();
        final List<Endpoint> guardedSends = new ArrayList<>();
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
        final List<RouteScope> routes = new ArrayList<>();
    }

    /** Where the YAML walk is: the route it is in (null outside one), and whether inside a guardedEffect policy. */
    private record Within(RouteScope route, boolean guarded) {
    }

    private static final Pattern PLACEHOLDER = Pattern.compile("\\{\\{(.+?)}}");
    /** Keys whose scalar value is an endpoint URI (a step's short form, {@code - to: "direct:x"}). */
    private static final Set<String> URI_STEPS = Set.of("to", "toD", "wireTap", "enrich", "pollEnrich", "from");
    private static final String COMPONENT_SERVICES = "META-INF/services/org/apache/camel/component/";
    /** The policy bean that guards an effect: begin before its steps, record after them. */
    static final String GUARDED_EFFECT = "guardedEffect";
    /** Calls that leave the process with a side effect: run as work, each belongs in a guardedEffect policy. */
    private static final Set<String> EFFECT_SCHEMES = Set.of("telegram-bot", "http", "https");
    /** Kinds every message intake queues for each stored message (its attachments, its album). */
    private static final List<String> MESSAGE_KINDS = List.of("album-child", "attachment");

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
        List<Problem> found = new RoutesCheck(property, applicationBeans::contains).check(target);
        found.forEach(out::println);
        long problems = found.stream().filter(p -> !p.warning()).count();
        long warnings = found.size() - problems;
        int files = Files.isDirectory(target) ? routeFiles(target).size() : 1;
        out.println("routes check: " + files + " file(s), " + (problems == 0 ? "no problems" : problems + " problem(s)")
                + (warnings == 0 ? "" : ", " + warnings + " warning(s)"));
        return problems == 0 ? 0 : 1;
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
        problems.addAll(flow(scans, only));
        problems.sort(Comparator.comparing((Problem p) -> p.file().toString()).thenComparingInt(Problem::line));
        return problems;
    }

    /**
     * Where work goes: each queued kind needs a route consuming it, a consumed kind should be
     * queued by something, and what runs as work (a work: route and the direct: routes it calls)
     * should make its telegram-bot and http(s) calls inside a guardedEffect policy.
     */
    private List<Problem> flow(Map<Path, Scan> scans, Path only) {
        Map<String, Endpoint> queued = new LinkedHashMap<>();
        Map<String, Endpoint> consumed = new LinkedHashMap<>();
        Map<String, RouteScope> directRoutes = new LinkedHashMap<>();
        List<RouteScope> routes = new ArrayList<>();
        scans.values().forEach(scan -> routes.addAll(scan.routes));
        List<Problem> problems = new ArrayList<>();
        for (RouteScope route : routes) {
            if (route.from != null && route.from.scheme().equals("work")) {
                Endpoint first = consumed.putIfAbsent(route.from.directName(), route.from);
                if (first != null && mine(route.from, only)) {
                    problems.add(new Problem(route.from.file(), route.from.line(), "work:" + route.from.directName() + " is consumed by two"
                            + " routes, here and at " + first.file() + ":" + first.line() + ": one kind has one handler route per process"));
                }
            } else if (route.from != null && route.from.scheme().equals("direct")) {
                directRoutes.putIfAbsent(route.from.directName(), route);
            }
            for (Endpoint send : allSends(route)) {
                queuedKind(send).ifPresent(kind -> queued.putIfAbsent(kind, send));
                if (intake(send) || route.from != null && intake(route.from)) {
                    MESSAGE_KINDS.forEach(kind -> queued.putIfAbsent(kind, send));
                }
            }
            if (route.from != null && intake(route.from)) {
                MESSAGE_KINDS.forEach(kind -> queued.putIfAbsent(kind, route.from));
            }
        }
        // An album's children, once aggregated, are decided: the album route queues the decision.
        if (consumed.containsKey("album-child")) {
            queued.putIfAbsent("album-decision", consumed.get("album-child"));
        }
        queued.forEach((kind, at) -> {
            if (!consumed.containsKey(kind) && mine(at, only)) {
                problems.add(Problem.ofTheFlow(at.file(), at.line(), "work:" + kind + " is queued here, but no route consumes it"
                        + " (from: \"work:" + kind + "\"): its items would wait, unhandled"));
            }
        });
        consumed.forEach((kind, at) -> {
            if (!queued.containsKey(kind) && mine(at, only)) {
                problems.add(Problem.warning(at.file(), at.line(), "work:" + kind + " is consumed here, but nothing queues it"
                        + " (to: \"work:" + kind + "\", or a webhook-inbox's workKind)"));
            }
        });
        Set<RouteScope> guardedOnly = new LinkedHashSet<>();
        Set<RouteScope> asWork = new LinkedHashSet<>();
        List<RouteScope> reach = new ArrayList<>(routes.stream().filter(r -> r.from != null && r.from.scheme().equals("work")).toList());
        while (!reach.isEmpty()) {
            RouteScope route = reach.remove(reach.size() - 1);
            if (!asWork.add(route)) {
                continue;
            }
            for (Endpoint send : route.sends) {
                RouteScope callee = send.scheme().equals("direct") ? directRoutes.get(send.directName()) : null;
                if (callee != null) {
                    reach.add(callee);
                }
            }
            for (Endpoint send : route.guardedSends) {
                RouteScope callee = send.scheme().equals("direct") ? directRoutes.get(send.directName()) : null;
                if (callee != null) {
                    guardedOnly.add(callee);
                }
            }
        }
        for (RouteScope route : asWork) {
            for (Endpoint send : route.sends) {
                String scheme = resolved(send.uri()).split(":", 2)[0];
                if (EFFECT_SCHEMES.contains(scheme) && mine(send, only)) {
                    problems.add(Problem.warning(send.file(), send.line(), scheme + ": call run as work outside a " + GUARDED_EFFECT
                            + " policy: a redelivered item would call it again (policy: {id: <effect name>, ref: " + GUARDED_EFFECT
                            + ", steps: [...]})"));
                }
            }
        }
        return problems;
    }

    private static List<Endpoint> allSends(RouteScope route) {
        List<Endpoint> all = new ArrayList<>(route.sends);
        all.addAll(route.guardedSends);
        return all;
    }

    private static boolean mine(Endpoint at, Path only) {
        return only == null || at.file().equals(only);
    }

    /** A channel's intake: what it stores is a message (albums, attachments) as well as its own kind of work. */
    private static boolean intake(Endpoint endpoint) {
        return endpoint.scheme().equals("telegram-inbox") || endpoint.scheme().equals("webhook-inbox") && !endpoint.consumer();
    }

    /** The kind an endpoint queues: {@code to: "work:<kind>"}, or a webhook-inbox's workKind (default {@code <channel>-event}). */
    private Optional<String> queuedKind(Endpoint send) {
        if (send.consumer()) {
            return Optional.empty();
        }
        if (send.scheme().equals("work")) {
            return Optional.of(send.directName());
        }
        if (send.scheme().equals("webhook-inbox")) {
            Map<String, String> options = new LinkedHashMap<>(send.parameters());
            int query = send.uri().indexOf('?');
            if (query >= 0) {
                for (String pair : send.uri().substring(query + 1).split("&")) {
                    int eq = pair.indexOf('=');
                    options.putIfAbsent(eq < 0 ? pair : pair.substring(0, eq), eq < 0 ? "" : pair.substring(eq + 1));
                }
            }
            if (options.containsKey("eventSink")) {
                // A sink of its own (telegram-webhook's) queues its own kind, which its route names with to: work:<kind>.
                return Optional.ofNullable(options.get("workKind")).map(this::resolved);
            }
            return Optional.of(resolved(options.getOrDefault("workKind", send.directName() + "-event")));
        }
        return Optional.empty();
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
        documents.forEach(document -> walk(file, document, null, Set.of(), scan, new Within(null, false)));
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
    private void walk(Path file, Node node, String key, Set<String> templateParameters, Scan scan, Within within) {
        if (node instanceof ScalarNode scalar) {
            scalar(file, line(node), key, scalar.getValue(), templateParameters, scan, within);
        } else if (node instanceof SequenceNode sequence) {
            sequence.getValue().forEach(item -> walk(file, item, key, templateParameters, scan, within));
        } else if (node instanceof MappingNode mapping) {
            Map<String, Node> entries = new LinkedHashMap<>();
            for (NodeTuple tuple : mapping.getValue()) {
                if (tuple.getKeyNode() instanceof ScalarNode k) {
                    entries.put(k.getValue(), tuple.getValueNode());
                }
            }
            Set<String> inTemplate = "routeTemplate".equals(key) ? templateParameters(entries.get("parameters")) : templateParameters;
            Within inside = within;
            if ("route".equals(key) || "routeTemplate".equals(key)) {
                RouteScope route = new RouteScope();
                scan.routes.add(route);
                inside = new Within(route, false);
            } else if ("policy".equals(key) && entries.get("ref") instanceof ScalarNode ref && GUARDED_EFFECT.equals(ref.getValue())) {
                inside = new Within(within.route(), true);
            }
            Within scope = inside;
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
                Endpoint endpoint = new Endpoint(file, line(uri), u.getValue(), parameters, lines, "from".equals(key));
                scan.endpoints.add(endpoint);
                scope(endpoint, scope);
                placeholders(file, line(uri), u.getValue(), inTemplate, scan);
            }
            entries.forEach((k, value) -> {
                if (!(k.equals("uri") && value instanceof ScalarNode)) {
                    walk(file, value, k, inTemplate, scan, scope);
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

    /** A route's input, or a call it makes (guarded or not). */
    private static void scope(Endpoint endpoint, Within within) {
        if (within.route() == null) {
            return;
        }
        if (endpoint.consumer()) {
            within.route().from = endpoint;
        } else {
            (within.guarded() ? within.route().guardedSends : within.route().sends).add(endpoint);
        }
    }

    private void placeholders(Path file, int line, String value, Set<String> templateParameters, Scan scan) {
        Matcher placeholders = PLACEHOLDER.matcher(value);
        while (placeholders.find()) {
            if (!templateParameters.contains(placeholders.group(1))) {
                placeholder(placeholders.group(1)).ifPresent(missing -> scan.problems.add(new Problem(file, line, missing)));
            }
        }
    }

    private void scalar(Path file, int line, String key, String value, Set<String> templateParameters, Scan scan, Within within) {
        placeholders(file, line, value, templateParameters, scan);
        if (key != null && URI_STEPS.contains(key)) {
            Endpoint endpoint = new Endpoint(file, line, value, key.equals("from"));
            scan.endpoints.add(endpoint);
            scope(endpoint, within);
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
                RouteScope scope = new RouteScope();
                scope.from = new Endpoint(file, Math.max(1, from.getLineNumber()), from.getEndpointUri(), true);
                scan.endpoints.add(scope.from);
                Set<Object> guarded = new LinkedHashSet<>();
                for (PolicyDefinition policy : ProcessorDefinitionHelper.filterTypeInOutputs(route.getOutputs(), PolicyDefinition.class)) {
                    if (GUARDED_EFFECT.equals(policy.getRef())) {
                        guarded.addAll(ProcessorDefinitionHelper.filterTypeInOutputs(policy.getOutputs(), SendDefinition.class));
                    }
                }
                for (SendDefinition<?> send : ProcessorDefinitionHelper.filterTypeInOutputs(route.getOutputs(), SendDefinition.class)) {
                    Endpoint endpoint = new Endpoint(file, Math.max(1, send.getLineNumber()), send.getEndpointUri(), false);
                    scan.endpoints.add(endpoint);
                    (guarded.contains(send) ? scope.guardedSends : scope.sends).add(endpoint);
                }
                scan.routes.add(scope);
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
                + (environment ? "environment variable " + key : key + " in the configuration or " + Settings.envName(key)));
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
