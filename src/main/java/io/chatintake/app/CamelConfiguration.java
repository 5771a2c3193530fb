package io.chatintake.app;

import io.chatintake.album.AlbumAggregateController;
import io.chatintake.album.AlbumAggregation;
import io.chatintake.album.AlbumAggregationRepository;
import io.chatintake.album.AlbumChildSource;
import io.chatintake.album.AlbumDeadlineSweep;
import io.chatintake.album.AlbumDecisionSource;
import io.chatintake.album.AlbumDecisions;
import io.chatintake.album.QuietPeriods;
import io.chatintake.attachment.AttachmentFetcher;
import io.chatintake.attachment.AttachmentStore;
import io.chatintake.attachment.AttachmentWorkSource;
import io.chatintake.channel.ChildMessages;
import io.chatintake.channel.telegram.SecondPollerGuard;
import io.chatintake.channel.telegram.TelegramBots;
import io.chatintake.channel.telegram.TelegramFileSource;
import io.chatintake.channel.telegram.TelegramWorkSource;
import io.chatintake.channel.webhook.WebhookEventDeriver;
import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Settings;
import io.chatintake.content.ContentExpiry;
import io.chatintake.message.ChildMessageListener;
import io.chatintake.ops.StatusHistory;
import io.chatintake.ops.StatusPage;
import io.chatintake.store.Database;
import io.chatintake.store.DatabaseHealthCheck;
import io.chatintake.store.Migrations;
import io.chatintake.support.Redactor;
import io.chatintake.support.trace.Tracing;
import io.chatintake.work.EffectGuard;
import io.chatintake.work.GuardedEffect;
import io.chatintake.work.HandlerRouteErrors;
import io.chatintake.work.Retention;
import io.chatintake.work.WorkDispatcher;
import io.chatintake.work.WorkQueue;
import io.chatintake.work.WorkSource;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import javax.sql.DataSource;
import org.apache.camel.BindToRegistry;
import org.apache.camel.CamelContext;
import org.apache.camel.opentelemetry2.OpenTelemetryTracer;
import org.apache.camel.CamelContextAware;
import org.apache.camel.component.telegram.TelegramComponent;
import org.apache.camel.health.HealthCheckHelper;
import org.apache.camel.model.Model;
import org.apache.camel.health.HealthCheckRegistry;
import org.apache.camel.spi.PropertiesComponent;
import org.apache.camel.spi.RoutesLoader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one wiring of chat-intake, as a camel-main configuration class: every bean the shipped
 * routes use, built from the configuration as Camel's properties component reads it
 * ({@code config/application.properties}, environment variables overriding each key), and the
 * runner's lifecycle as Camel services. {@code java -jar chat-intake.jar} ({@link Runner}) and
 * camel-main's own {@code org.apache.camel.main.Main} both start the product through it
 * ({@code camel.main.configuration-classes}); so do the tests.
 * <p>
 * A bean bound before this class runs is kept (a test's own {@code dataSource}): the
 * configuration only adds what is missing, and closes only what it opened.
 */
public class CamelConfiguration implements org.apache.camel.CamelConfiguration, CamelContextAware {
    private static final Logger LOG = LoggerFactory.getLogger(CamelConfiguration.class);

    public static final String ROUTES_DIR = "chat-intake.routes-dir";
    public static final String HTTP_PORT = "chat-intake.http.port";
    public static final String ROUTES_RELOAD = "chat-intake.routes-reload";

    private CamelContext camel;
    private Settings settings;
    private DataSource dataSource;
    /** Null when a data source was given: its owner opened it. */
    private DatabaseService database;
    private WorkDispatcher dispatcher;
    private AttachmentFetcher fetcher;
    private AlbumDecisions albumDecisions;
    private AlbumAggregateController albumController;
    private AlbumAggregationRepository albumRepository;

    @Override
    public void setCamelContext(CamelContext camelContext) {
        this.camel = camelContext;
    }

    @Override
    public CamelContext getCamelContext() {
        return camel;
    }

    /**
     * The product's database, migrated before any route starts. An external one when
     * {@code chat-intake.db.url} is set, else the embedded one; closed after Camel has stopped. One
     * that does not answer yet is waited for ({@link DatabaseService}): the routes start once it
     * does. A {@code dataSource} bound before this class runs is used as it is: its owner migrates
     * it (and records nothing in {@code runner_start}).
     */
    @BindToRegistry("dataSource")
    public synchronized DataSource dataSource() {
        if (dataSource != null) {
            return dataSource;
        }
        DataSource given = camel.getRegistry().lookupByNameAndType("dataSource", DataSource.class);
        if (given != null) {
            dataSource = given;
            return dataSource;
        }
        database = new DatabaseService(settings());
        database.tryOpen();
        try {
            // Added before anything else, so Camel stops it last: after every route and the dispatcher.
            camel.addService(database);
        } catch (Exception e) {
            database.stop();
            throw new IllegalStateException(e.getMessage(), e);
        }
        camel.getRegistry().bind(DatabaseService.NAME, database);
        dataSource = database.dataSource();
        return dataSource;
    }

    @BindToRegistry("effectGuard")
    public EffectGuard effectGuard() {
        return new EffectGuard(dataSource());
    }

    /** A guarded effect as one step: policy: {id: <effect name>, ref: guardedEffect, steps: [...]}. */
    @BindToRegistry(GuardedEffect.BEAN)
    public GuardedEffect guardedEffect() {
        return new GuardedEffect(effectGuard());
    }

    /** What happens when a channel stores a child message: its attachments are recorded, then its album is scheduled. */
    @BindToRegistry("childMessageListener")
    public ChildMessageListener childMessageListener() {
        return ChildMessages.listener(QuietPeriods.from(settings()));
    }

    /**
     * Derives stored webhook events after their 2xx (children, albums, attachments, work items), in
     * every process, whether or not its routes receive the events' channel: a process that died
     * leaves them to whoever runs next. The work dispatcher's scheduler runs it.
     */
    @BindToRegistry("webhookEventDeriver")
    public WebhookEventDeriver webhookEventDeriver() {
        return new WebhookEventDeriver(dataSource(), childMessageListener());
    }

    @BindToRegistry("albumDecisions")
    public synchronized AlbumDecisions albumDecisions() {
        if (albumDecisions == null) {
            albumDecisions = new AlbumDecisions(dataSource());
        }
        return albumDecisions;
    }

    /** routes/albums.yaml: the aggregator's threads for completed albums. */
    @BindToRegistry("albumRecorders")
    public ExecutorService albumRecorders() {
        return AlbumDecisions.recorders();
    }

    /** routes/albums.yaml: the aggregator's strategy and completion predicate. */
    @BindToRegistry("albumAggregation")
    public AlbumAggregation albumAggregation() {
        return new AlbumAggregation();
    }

    /** One per process: the sweep and the repository follow the aggregator it is given, across route reloads. */
    @BindToRegistry("albumAggregateController")
    public synchronized AlbumAggregateController albumAggregateController() {
        if (albumController == null) {
            albumController = new AlbumAggregateController();
        }
        return albumController;
    }

    /** One per process: the route's aggregator and the sweep share it (the sweep's removals, the batched confirmations). */
    @BindToRegistry("albumAggregationRepository")
    public synchronized AlbumAggregationRepository albumAggregationRepository() {
        if (albumRepository == null) {
            albumRepository = new AlbumAggregationRepository(dataSource(), albumAggregateController());
        }
        return albumRepository;
    }

    @BindToRegistry("albumDeadlineSweep")
    public AlbumDeadlineSweep albumDeadlineSweep() {
        return new AlbumDeadlineSweep(albumAggregationRepository(), albumAggregateController());
    }

    /** One per process: it opens the media store (an S3 client, checked at start). */
    @BindToRegistry("attachmentFetcher")
    public synchronized AttachmentFetcher attachmentFetcher() {
        if (fetcher == null) {
            Settings s = settings();
            fetcher = new AttachmentFetcher(dataSource(), AttachmentFetcher.Options.from(s, workOptions().maxAttempts()),
                    new TelegramFileSource(TelegramBots.apiUrl(null, s::get), botName -> TelegramBots.token(botName, null, null, s::get)));
        }
        return fetcher;
    }

    /** Retention: the background job is routes/retention.yaml (a timer calling this bean). */
    @BindToRegistry("retention")
    public Retention retention() {
        return Retention.from(settings(), dataSource());
    }

    /** Content expiry (retention.content-days): the first step of routes/retention.yaml. */
    @BindToRegistry("contentExpiry")
    public ContentExpiry contentExpiry() {
        return ContentExpiry.from(settings(), dataSource());
    }

    /** Bound before the routes start, so intake can wake it; its workers start once every route runs. */
    @BindToRegistry("workDispatcher")
    public synchronized WorkDispatcher workDispatcher() {
        if (dispatcher == null) {
            dispatcher = new WorkDispatcher(camel, new WorkQueue(dataSource()), workSources(), workOptions());
        }
        return dispatcher;
    }

    @Override
    public void configure(CamelContext context) throws Exception {
        StartingHttpGate gate = null;
        Path routesDir = routesDirectory(settings());
        traceRoutes(context);
        HealthCheckRegistry health = HealthCheckHelper.getHealthCheckRegistry(context);
        if (health != null) {
            health.register(new DatabaseHealthCheck(dataSource()));
        }
        // The history the status page graphs, written by every process, whether or not it serves the page.
        context.addService(new StatusHistory(settings(), dataSource()));
        // GET /status (off until chat-intake.status.token is set), where this process serves HTTP.
        if (settings().getBoolean("camel.server.enabled")) {
            HttpLimits limits = HttpLimits.from(settings());
            // Bound before the server starts: platform-http takes the Vert.x it finds in the registry.
            HttpServerVertx vertx = new HttpServerVertx(limits);
            context.getRegistry().bind("vertx", vertx);
            context.getManagementStrategy().addEventNotifier(new HttpServerVertx.Closing(vertx));
            context.addRoutes(StatusPage.route(settings(), dataSource()));
            gate = new StartingHttpGate(context);
            context.getManagementStrategy().addEventNotifier(gate);
            context.getManagementStrategy().addEventNotifier(new RequestLimits(context, limits));
        }
        // camel-telegram in users' own routes gets the bot main's token and server from the
        // configuration, so that the token never has to be written into a route's URI.
        Optional<String> token = settings().get(TelegramBots.tokenKey(TelegramBots.MAIN));
        if (token.isPresent()) {
            TelegramComponent telegram = context.getComponent("telegram", TelegramComponent.class);
            telegram.setAuthorizationToken(token.get());
            telegram.setBaseUri(TelegramBots.apiUrl(null, settings()::get));
        }
        // A camel-telegram consumer of a bot telegram-inbox polls would confirm updates outside storage.
        SecondPollerGuard.install(context);
        // work: routes take their failure handling from the work engine, whatever file they are in.
        context.getCamelContextExtension().getContextPlugin(Model.class).addModelLifecycleStrategy(new HandlerRouteErrors());
        // One file that does not load is one line in the log, not a runner that does not start.
        context.getCamelContextExtension().addContextPlugin(RoutesLoader.class, new RouteFilesLoader(context));
        RunnerLifecycle lifecycle = new RunnerLifecycle(workDispatcher(), dataSource(), routesDir, database, gate);
        context.addLifecycleStrategy(lifecycle);
    }

    /** camel-opentelemetry2 traces the routes when the OTEL_* environment turns tracing on ({@link Tracing}). */
    private void traceRoutes(CamelContext context) {
        if (Tracing.start(System.getenv(), settings().getBoolean(Tracing.INCLUDE_CHAT_IDS)).on()) {
            new OpenTelemetryTracer().init(context);
        }
    }

    /** The effective configuration: each key Camel knows, resolved (placeholders, system and environment overrides). */
    synchronized Settings settings() {
        if (settings == null) {
            PropertiesComponent properties = camel.getPropertiesComponent();
            settings = resolved(properties);
            Redactor.register(settings.secretValues());
            LOG.info("chat-intake {} starting; configuration from {}", Runner.version(),
                    properties.getLocations().isEmpty() ? "built-in defaults" : String.join(", ", properties.getLocations()));
            checkHttpSettings(settings);
        }
        return settings;
    }

    /** Each key Camel knows, resolved: at start, and again after a configuration reload. */
    static Settings resolved(PropertiesComponent properties) {
        Properties all = properties.loadProperties();
        Map<String, String> values = new TreeMap<>();
        for (String key : all.stringPropertyNames()) {
            try {
                properties.resolveProperty(key).ifPresent(value -> values.put(key, value));
            } catch (RuntimeException e) {
                // A placeholder this key names is not set: Camel reports it where the key is used.
            }
        }
        return Settings.resolved(null, values, System.getenv());
    }

    /**
     * camel-main reads these through placeholders ({@code camel.server.port={{chat-intake.http.port}}}):
     * checked here as well so that a typo is named by its key.
     */
    static void checkHttpSettings(Settings settings) {
        settings.getInt(HTTP_PORT);
        HttpLimits.from(settings);
        settings.getBoolean(ROUTES_RELOAD);
    }

    private WorkDispatcher.Options workOptions() {
        return WorkDispatcher.Options.from(settings());
    }

    /**
     * How the rows of each built-in kind are read. Which kinds this process runs is up to the
     * routes: those with a started {@code work:<kind>} route. {@code <channel>-event} kinds belong
     * to webhook-inbox routes, which register their sources themselves.
     */
    private static List<WorkSource> workSources() {
        return List.of(new TelegramWorkSource(), new AlbumChildSource(), new AlbumDecisionSource(), new AttachmentWorkSource());
    }

    static Path routesDirectory(Settings settings) {
        return Path.of(settings.value(ROUTES_DIR)).toAbsolutePath().normalize();
    }

    /** camel-main watches the routes directory from its first step: it must exist before Camel starts. */
    static void createRoutesDirectory(Settings settings) {
        Path dir = routesDirectory(settings);
        if (!Files.isDirectory(dir)) {
            try {
                Files.createDirectories(dir);
                LOG.warn("routes: directory {} did not exist ({}); created it empty; no route runs until one is added there",
                        dir, Settings.envName(ROUTES_DIR));
            } catch (IOException e) {
                throw new ConfigurationException(Settings.envName(ROUTES_DIR) + ": cannot create routes directory " + dir + ": " + e.getMessage());
            }
        }
    }
}
