package io.chatintake.ops;

import io.chatintake.attachment.MediaStore;
import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Secret;
import io.chatintake.config.Settings;
import io.chatintake.store.OperatorPause;
import io.chatintake.support.MeterRegistryLookup;
import io.chatintake.support.ProcessIdentity;
import io.chatintake.work.WorkDispatcher;
import io.vertx.core.MultiMap;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.apache.camel.CamelContext;
import org.apache.camel.CamelContextAware;
import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.apache.camel.Processor;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.component.platform.http.vertx.HttpMessage;
import org.apache.camel.support.service.ServiceSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code GET /status}: one HTML page a person reads at a glance ({@link StatusReport}), and the
 * actions it offers, each a {@code POST /status/<action>}; {@code GET /status/messages} and
 * {@code /status/messages/<key>} ({@link MessagesPage}) read behind the same sign-in. Off unless
 * {@code chat-intake.status.token} is set (404 saying how to turn it on).
 * <p>
 * The token must have at least {@value #MIN_TOKEN_LENGTH} characters, or the page stays off. The
 * page needs the token as {@code Authorization: Bearer <token>} (read only: a bearer never acts),
 * or a session: opening {@code /status?token=<token>} once, or the sign-in form a browser gets with
 * its 401 ({@code POST /status/login}), sets a signed session cookie
 * ({@link StatusSession}, {@code HttpOnly; SameSite=Strict}, {@code Secure} when the browser came
 * over TLS) and redirects to {@code /status}, so the token leaves the address bar and the history.
 * Actions need that session, its CSRF token in the form, a request from the page's own origin, and
 * the operator's name (typed once, kept in a cookie); {@code POST /status/logout} ends it. Wrong
 * tokens are limited per client address ({@link WrongTokenLimit}: 429 past the limit). Anything
 * else is refused before a single row is read, and says that nothing changed. Every answer is
 * {@code Cache-Control: no-store}; no request header is echoed back.
 */
public final class StatusPage extends ServiceSupport implements Processor, CamelContextAware {
    private static final Logger LOG = LoggerFactory.getLogger(StatusPage.class);
    public static final String PATH = "/status";
    public static final String TOKEN = "chat-intake.status.token";
    public static final String REFRESH_SECONDS = "chat-intake.status.refresh-seconds";
    /** 32 random hex characters are 128 bits: beyond guessing even without the rate limit. */
    static final int MIN_TOKEN_LENGTH = 32;
    private static final String BEARER = "Bearer ";
    private static final String TEXT = "text/plain; charset=utf-8";

    /** The pages besides {@code /status}: {@link MessagesPage}'s. */
    enum View { SEARCH, TIMELINE }

    private static final String VIEW = "statusView";

    /** The page's actions: {@code POST /status/<name>}. */
    enum Action {
        LOGIN("login"), OPERATOR("operator"), LOGOUT("logout"),
        RETRY("retry"), RETRY_KIND("retry-kind"), SETTLE_EFFECT("settle-effect"), RESOLVE_ALBUM("resolve-album"), ERASE("erase"),
        PAUSE_BOT(OperatorPause.Subject.TELEGRAM_BOT, true), RESUME_BOT(OperatorPause.Subject.TELEGRAM_BOT, false),
        PAUSE_KIND(OperatorPause.Subject.WORK_KIND, true), RESUME_KIND(OperatorPause.Subject.WORK_KIND, false),
        /** Act on many: the count of what a filter matches, with a confirm button posting {@link #ACT_ON_MANY_RUN}. */
        ACT_ON_MANY("act-on-many"), ACT_ON_MANY_RUN("act-on-many-run"), CANCEL_ACTION("cancel-action");

        final String path;
        /** What a pause or resume action is about (its form's field is named after it: bot, kind); null for the others. */
        final OperatorPause.Subject subject;
        final boolean pause;

        Action(String path) {
            this.path = path;
            this.subject = null;
            this.pause = false;
        }

        /** Recorded as the CLI records it: pause-bot, resume-kind, ... */
        Action(OperatorPause.Subject subject, boolean pause) {
            this.path = (pause ? "pause-" : "resume-") + subject.word;
            this.subject = subject;
            this.pause = pause;
        }

        static Action pausing(OperatorPause.Subject subject, boolean pause) {
            return Arrays.stream(values()).filter(a -> a.subject == subject && a.pause == pause).findFirst().orElseThrow();
        }
    }

    private final Optional<Secret> token;
    private final boolean tokenTooShort;
    private final WrongTokenLimit wrongTokens;
    private final TrustedProxies proxies;
    private final Optional<StatusSession> sessions;
    private final StatusReport report;
    private final OperatorActions actions;
    private final BulkWorkAction bulk;
    private final MessagesPage messages;
    private final Settings settings;
    private final DataSource dataSource;
    private final RecentRefusals refusals = new RecentRefusals(Clock.systemUTC());
    private final RefusalLog refusalLog = new RefusalLog();
    private CamelContext context;
    private ScheduledExecutorService sampler;
    /** Runs confirmed actions on many, one at a time, in the background: the page answers at once and shows their progress. */
    private volatile ExecutorService actingOnMany;
    private final AtomicBoolean stopping = new AtomicBoolean();

    StatusPage(Settings settings, DataSource dataSource) {
        Optional<Secret> configured = settings.secret(TOKEN);
        this.tokenTooShort = configured.isPresent() && configured.get().reveal().length() < MIN_TOKEN_LENGTH;
        this.token = tokenTooShort ? Optional.empty() : configured;
        this.wrongTokens = new WrongTokenLimit(settings.getInt(WrongTokenLimit.LIMIT),
                Duration.ofSeconds(settings.getLong(WrongTokenLimit.WINDOW_SECONDS)), Clock.systemUTC());
        this.proxies = TrustedProxies.from(settings);
        this.sessions = token.map(t -> new StatusSession(t, Clock.systemUTC()));
        this.messages = new MessagesPage(dataSource);
        this.report = new StatusReport(dataSource, settings, Duration.ofSeconds(settings.getLong(REFRESH_SECONDS)),
                ProcessIdentity.name(), this::handledKinds);
        this.actions = new OperatorActions(dataSource);
        this.settings = settings;
        this.bulk = new BulkWorkAction(dataSource, BulkWorkAction.CHUNK);
        this.dataSource = dataSource;
    }

    /** The routes serving the page and its actions, for the runner to add: on the management port if it has one, else the HTTP port. */
    public static RouteBuilder route(Settings settings, DataSource dataSource) {
        StatusPage page = new StatusPage(settings, dataSource);
        return new RouteBuilder() {
            @Override
            public void configure() {
                String http = ManagementPort.component(getContext(), settings);
                from(http + ":" + PATH + "?httpMethodRestrict=GET&muteException=true").routeId("status-page").process(page);
                from(http + ":" + PATH + MessagesPage.SEARCH + "?httpMethodRestrict=GET&muteException=true").routeId("status-messages")
                        .setProperty(VIEW, constant(View.SEARCH)).process(page);
                from(http + ":" + PATH + MessagesPage.SEARCH + "/{key}?httpMethodRestrict=GET&muteException=true").routeId("status-message")
                        .setProperty(VIEW, constant(View.TIMELINE)).process(page);
                for (Action action : Action.values()) {
                    from(http + ":" + PATH + "/" + action.path + "?httpMethodRestrict=POST&muteException=true")
                            .routeId("status-" + action.path).setProperty("statusAction", constant(action)).process(page);
                }
            }
        };
    }

    private Set<String> handledKinds() {
        WorkDispatcher dispatcher = context == null ? null : WorkDispatcher.of(context);
        return dispatcher == null ? new TreeSet<>() : new TreeSet<>(dispatcher.kinds());
    }

    @Override
    public void setCamelContext(CamelContext camelContext) {
        this.context = camelContext;
    }

    @Override
    public CamelContext getCamelContext() {
        return context;
    }

    @Override
    protected void doStart() {
        if (tokenTooShort) {
            LOG.warn("status page: OFF ({} answers 404): {} is shorter than {} characters; set a long random value"
                    + " (openssl rand -hex 32)", PATH, Settings.envName(TOKEN), MIN_TOKEN_LENGTH);
            return;
        }
        if (token.isEmpty()) {
            LOG.info("status page: OFF ({} answers 404): set {} to turn it on", PATH, Settings.envName(TOKEN));
            return;
        }
        LOG.info("status page: on at {} (token required: Authorization: Bearer ..., or open {}?token=... once for a session)", PATH, PATH);
        // Refusals are counted per minute whether or not anyone looks, so "the last hour" is an hour.
        sampler = context.getExecutorServiceManager().newSingleThreadScheduledExecutor(this, "status-page-sampler");
        sampler.scheduleAtFixedRate(() -> refusals.sample(MeterRegistryLookup.of(context)),
                0, RecentRefusals.SAMPLE_EVERY.toSeconds(), TimeUnit.SECONDS);
        stopping.set(false);
        actingOnMany = context.getExecutorServiceManager().newSingleThreadExecutor(this, "status-page-act-on-many");
    }

    @Override
    protected void doStop() {
        if (sampler != null) {
            context.getExecutorServiceManager().shutdown(sampler);
            sampler = null;
        }
        if (actingOnMany != null) {
            // A running action ends after its current chunk, its row saying cancelled: never left "running".
            stopping.set(true);
            context.getExecutorServiceManager().shutdownGraceful(actingOnMany);
            actingOnMany = null;
        }
    }

    @Override
    public void process(Exchange exchange) {
        Message message = exchange.getMessage();
        HttpServerRequest request = null;
        if (message instanceof HttpMessage http) {
            request = http.getRequest();
            // Straight on the response: Camel's HTTP header filter drops a Cache-Control header set on the message.
            http.getResponse().putHeader("Cache-Control", "no-store");
        }
        Action action = exchange.getProperty("statusAction", Action.class);
        message.removeHeaders("*");
        message.setBody(null);
        if (token.isEmpty() || request == null) {
            answer(message, 404, TEXT, "The status page is off" + (tokenTooShort ? ": its token is shorter than " + MIN_TOKEN_LENGTH
                    + " characters" : "") + ". Set " + Settings.envName(TOKEN) + " (" + TOKEN + ") to a long random value (at least "
                    + MIN_TOKEN_LENGTH + " characters, e.g. openssl rand -hex 32) to turn it on, then open " + PATH + "?token=<value>.\n");
            return;
        }
        String client = proxies.client(request);
        OptionalLong wait = wrongTokens.retryAfter(client);
        if (wait.isPresent()) {
            refusalLog.refused(429, request.method() + " " + request.path(), "too many wrong tokens from this address (Retry-After "
                    + wait.getAsLong() + " s)");
            message.setHeader("Retry-After", Long.toString(wait.getAsLong()));
            answer(message, 429, TEXT, "Too many wrong tokens from this address: try again in " + wait.getAsLong()
                    + " seconds. Nothing changed.\n");
            return;
        }
        StatusSession session = sessions.orElseThrow();
        String cookies = request.getHeader("Cookie");
        Optional<String> sessionId = session.verify(StatusSession.cookie(cookies, StatusSession.COOKIE));
        if (action == null) {
            page(message, request, client, session, sessionId, cookies, exchange.getProperty(VIEW, View.class));
        } else if (action == Action.LOGIN) {
            login(message, request, client, session);
        } else {
            act(message, request, action, session, sessionId, cookies);
        }
    }

    /** @param view a messages page, or null for the status page itself */
    private void page(Message message, HttpServerRequest request, String client, StatusSession session, Optional<String> sessionId,
                      String cookies, View view) {
        String authorization = request.getHeader("Authorization");
        String queryToken = request.getParam("token");
        boolean bearer = authorization != null && authorization.startsWith(BEARER)
                && matches(authorization.substring(BEARER.length()).trim());
        if (queryToken != null) {
            if (!matches(queryToken)) {
                wrongTokens.wrong(client);
                refuse(message, request, "a wrong ?token=");
                return;
            }
            // The token leaves the address bar at once: the session cookie stands for it from now on.
            message.setHeader("Set-Cookie", StatusSession.sessionCookie(session.open(), proxies.overTls(request)));
            // Back to the page asked for (its last segment, relative), without the query that held the token.
            redirect(message, request.path().substring(request.path().lastIndexOf('/') + 1),
                    "Signed in: the page is at " + PATH + ".\n");
            return;
        }
        if (!bearer && sessionId.isEmpty()) {
            if (authorization != null) {
                wrongTokens.wrong(client);
            }
            refuse(message, request, authorization != null ? "a wrong bearer token" : cookies != null && cookies.contains(StatusSession.COOKIE + "=")
                    ? "an expired or foreign session cookie" : "no token");
            return;
        }
        try {
            StatusReport.Viewer viewer = new StatusReport.Viewer(sessionId.map(session::csrf).orElse(null),
                    StatusSession.cookie(cookies, StatusSession.OPERATOR_COOKIE),
                    page(request, "parked-page"), page(request, "effects-page"));
            String html = view != null ? messages.render(request, view == View.TIMELINE)
                    : report.render(refusals.lastHour(MeterRegistryLookup.of(context)), viewer);
            // The page holds no link or script of anyone else's, posts only to itself, and is never framed.
            message.setHeader("Content-Security-Policy",
                    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; frame-ancestors 'none'");
            // Not no-referrer: with it browsers post "Origin: null", and the actions check the origin. The URL holds no token.
            message.setHeader("Referrer-Policy", "same-origin");
            message.setHeader("X-Content-Type-Options", "nosniff");
            message.setHeader("X-Frame-Options", "DENY");
            answer(message, 200, "text/html; charset=utf-8", html);
        } catch (SQLException e) {
            LOG.warn("status page: cannot read the database: {} (SQL state {})", e.getMessage(), e.getSQLState());
            answer(message, 503, TEXT, "The database does not answer; the page shows again once it does.\n");
        }
    }

    /** {@code POST /status/login} with the token in the form (the page's sign-in form): the same session as {@code ?token=}, no token in any URL. */
    private void login(Message message, HttpServerRequest request, String client, StatusSession session) {
        String crossSite = crossSite(request);
        if (crossSite != null) {
            LOG.warn("status page: POST {} refused: {}; nothing changed", request.path(), crossSite);
            answer(message, 403, TEXT, "Refused: " + crossSite + ". Nothing changed.\n");
            return;
        }
        String offered = request.formAttributes().get("token");
        if (!matches(offered)) {
            if (offered != null && !offered.isEmpty()) {
                wrongTokens.wrong(client);
            }
            refuse(message, request, offered == null || offered.isEmpty() ? "a sign-in without a token" : "a wrong token signing in");
            return;
        }
        message.setHeader("Set-Cookie", StatusSession.sessionCookie(session.open(), proxies.overTls(request)));
        redirect(message, "../" + PATH.substring(1), "Signed in: the page is at " + PATH + ".\n");
    }

    private void act(Message message, HttpServerRequest request, Action action, StatusSession session, Optional<String> sessionId,
                     String cookies) {
        if (sessionId.isEmpty()) {
            if (request.getHeader("Authorization") != null) {
                LOG.warn("status page: POST {} refused: a bearer token reads and never acts; nothing changed", request.path());
                answer(message, 403, TEXT, "Refused: the bearer token only reads. Actions need a session: open " + PATH
                        + "?token=<token> in a browser. Nothing changed.\n");
                return;
            }
            refuse(message, request, "an action without a session");
            return;
        }
        String crossSite = crossSite(request);
        if (crossSite != null) {
            LOG.warn("status page: POST {} refused: {}; nothing changed", request.path(), crossSite);
            answer(message, 403, TEXT, "Refused: " + crossSite + ". Nothing changed.\n");
            return;
        }
        MultiMap form = request.formAttributes();
        if (!session.csrfMatches(sessionId.get(), form.get("csrf"))) {
            LOG.warn("status page: POST {} refused: {} CSRF token; nothing changed", request.path(), form.get("csrf") == null ? "no" : "a wrong");
            answer(message, 403, TEXT, "Refused: the form's CSRF token is missing or not this session's (reload the page). Nothing changed.\n");
            return;
        }
        if (action == Action.LOGOUT) {
            message.setHeader("Set-Cookie", StatusSession.endedSessionCookie(proxies.overTls(request)));
            LOG.info("status page: a session signed out");
            redirect(message, "../" + PATH.substring(1), "Signed out.\n");
            return;
        }
        if (action == Action.OPERATOR) {
            String name = StatusSession.cleanName(form.get("name"));
            if (name.isEmpty()) {
                answer(message, 400, TEXT, "Type a name: it is recorded with each action. Nothing changed.\n");
                return;
            }
            message.setHeader("Set-Cookie", StatusSession.operatorCookie(name, proxies.overTls(request)));
            redirect(message, "../" + PATH.substring(1) + "#actions", "Actions are now recorded as done by " + name + ".\n");
            return;
        }
        String by = StatusSession.cookie(cookies, StatusSession.OPERATOR_COOKIE);
        if (by == null || by.isEmpty()) {
            answer(message, 400, TEXT, "Type your name on the page first: every action records who did it. Nothing changed.\n");
            return;
        }
        try {
            if (action == Action.ACT_ON_MANY || action == Action.ACT_ON_MANY_RUN) {
                actOnMany(message, action, form, by);
                return;
            }
            Performed performed = perform(action, form, by);
            if (performed == null) {
                answer(message, 400, TEXT, "The form lacks what " + action.path + " needs. Nothing changed.\n");
                return;
            }
            if (action == Action.ERASE && !"yes".equals(form.get("confirm"))) {
                confirmErasure(message, form, performed.outcome().sentence());
                return;
            }
            LOG.info("status page: {} {} by {}: {}", action.path, performed.target(), by, performed.outcome().sentence());
            redirect(message, "../" + PATH.substring(1) + "#actions", performed.outcome().sentence() + "\n");
        } catch (SQLException e) {
            // The action and its operator_action row commit together: neither was written.
            LOG.warn("status page: {} not done: the database did not answer or refused the action or its record ({} {});"
                    + " nothing changed", action.path, e.getSQLState(), e.getMessage());
            answer(message, 503, TEXT, "The database did not answer or refused the action or its record: " + action.path
                    + " was not done. Nothing changed.\n");
        }
    }

    /** An erasure's count first: what it would remove, and the form that confirms it (or a way back). */
    private static void confirmErasure(Message message, MultiMap form, String counted) {
        message.setHeader("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'");
        message.setHeader("X-Frame-Options", "DENY");
        Html html = new Html();
        html.raw("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>chat-intake: confirm erasure</title></head><body>")
                .raw("<p id=\"erase-count\">").text(counted).raw("</p>")
                .raw("<form method=\"post\" action=\"" + Action.ERASE.path + "\">");
        for (String field : List.of("csrf", "subject", "key")) {
            html.raw("<input type=\"hidden\" name=\"").text(field).raw("\" value=\"").text(form.get(field)).raw("\">");
        }
        html.raw("<input type=\"hidden\" name=\"confirm\" value=\"yes\">")
                .raw("<button id=\"erase-confirm\">erase now</button></form>")
                .raw("<p><a id=\"erase-cancel\" href=\"../" + PATH.substring(1) + "#erase\">cancel</a> (nothing changed)</p></body></html>");
        answer(message, 200, "text/html; charset=utf-8", html.toString());
    }

    /**
     * Act on many: first the count of what the form's filter matches and a page to confirm it;
     * confirmed, the action runs in the background in chunks, its progress on the page (its
     * operator_action row) with a cancel button.
     */
    private void actOnMany(Message message, Action action, MultiMap form, String by) throws SQLException {
        WorkFilter filter;
        try {
            filter = WorkFilter.of(form::get);
        } catch (ConfigurationException e) {
            answer(message, 400, TEXT, e.getMessage() + ". Nothing changed.\n");
            return;
        }
        BulkWorkAction.Kind kind = BulkWorkAction.named(form.get("do"));
        if (kind == null) {
            answer(message, 400, TEXT, "The form lacks what act-on-many needs (do: retry, settle-performed, settle-not-performed)."
                    + " Nothing changed.\n");
            return;
        }
        long count = bulk.count(kind, filter);
        if (action == Action.ACT_ON_MANY) {
            message.setHeader("Content-Security-Policy", "default-src 'none'; form-action 'self'; frame-ancestors 'none'");
            answer(message, 200, "text/html; charset=utf-8", StatusForms.confirmActOnMany(form.get("csrf"), form.get("do"), filter, count));
            return;
        }
        if (actingOnMany == null) {
            answer(message, 503, TEXT, "The page is stopping: act-on-many was not started. Nothing changed.\n");
            return;
        }
        actingOnMany.execute(() -> {
            try {
                BulkWorkAction.Progress done = bulk.run(kind, filter, by, stopping::get, progress -> { });
                LOG.info("status page: {} by {} on {}: {} item(s){}", kind.action, by, filter, done.changed(), done.cancelled() ? ", cancelled" : "");
            } catch (SQLException e) {
                LOG.warn("status page: {} by {} on {} stopped: the database did not answer ({} {}); its operator_action row says how far it got",
                        kind.action, by, filter, e.getSQLState(), e.getMessage());
            }
        });
        LOG.info("status page: {} by {} on {} started ({} item(s) matched)", kind.action, by, filter, count);
        redirect(message, "../" + PATH.substring(1) + "#actions", kind.action + " of " + count + " item(s) matching " + filter
                + " started (after any other running first): its progress is under Recent actions.\n");
    }

    /** What an action was done to and how it ended, both also in its operator_action row. */
    private record Performed(String target, OperatorActions.ActionResult outcome) {
    }

    /** The action the form asks for, or null when a field it needs is missing or malformed. */
    private Performed perform(Action action, MultiMap form, String by) throws SQLException {
        switch (action) {
            case RETRY -> {
                String id = form.get("id");
                return id == null || !id.matches("\\d{1,18}") ? null : new Performed("work item " + id, actions.retry(Long.parseLong(id), by));
            }
            case RETRY_KIND -> {
                String kind = form.get("kind");
                return kind == null || kind.isBlank() ? null : new Performed("parked " + kind, actions.retryParked(kind, by));
            }
            case SETTLE_EFFECT -> {
                String key = form.get("key");
                String result = form.get("result");
                if (key == null || key.isBlank() || !("performed".equals(result) || "not-performed".equals(result))) {
                    return null;
                }
                return new Performed("effect " + key, actions.settleEffect(key, result.equals("performed"), by));
            }
            case RESOLVE_ALBUM -> {
                String key = form.get("album");
                return key == null || key.isBlank() ? null : new Performed("album " + key, actions.resolveAlbum(key, by));
            }
            case ERASE -> {
                String subject = form.get("subject");
                String key = form.get("key");
                if (subject == null || key == null || key.isBlank() || key.length() > 400) {
                    return null;
                }
                Erasure.Target target;
                try {
                    target = Erasure.Target.parse(subject, key.trim());
                } catch (ConfigurationException e) {
                    return null;
                }
                // Without the confirmation only the count: the answer shows it with the form that confirms.
                boolean confirmed = "yes".equals(form.get("confirm"));
                try (MediaStore media = confirmed ? MediaStore.configured(settings) : null) {
                    return new Performed(target.label(), new Erasure(dataSource, media).erase(target, !confirmed, by));
                }
            }
            case PAUSE_BOT, RESUME_BOT, PAUSE_KIND, RESUME_KIND -> {
                String name = form.get(action.subject.word);
                if (name == null || name.isBlank()) {
                    return null;
                }
                return new Performed(action.subject.label + " " + name,
                        action.pause ? actions.pause(action.subject, name, by) : actions.resume(action.subject, name, by));
            }
            case CANCEL_ACTION -> {
                String id = form.get("id");
                if (id == null || !id.matches("\\d{1,18}")) {
                    return null;
                }
                boolean asked = BulkWorkAction.requestCancel(dataSource, Long.parseLong(id));
                return new Performed("operator action " + id, new OperatorActions.ActionResult(asked, asked
                        ? "operator action " + id + " stops after its current chunk; its row then says cancelled"
                        : "operator action " + id + " is not running; nothing changed"));
            }
            default -> throw new IllegalArgumentException(action.path);
        }
    }

    /**
     * Why a POST does not come from the page's own origin, or null when it does. Browsers send
     * {@code Sec-Fetch-Site} and {@code Origin} with every form POST; the SameSite cookie already
     * keeps the session from travelling with a cross-site one, this says so explicitly.
     */
    private static String crossSite(HttpServerRequest request) {
        String fetchSite = request.getHeader("Sec-Fetch-Site");
        if (fetchSite != null && !fetchSite.equals("same-origin")) {
            return "a " + fetchSite + " request (Sec-Fetch-Site), not one from this page";
        }
        String origin = request.getHeader("Origin");
        String host = request.getHeader("Host");
        if (origin != null && (host == null || !origin.substring(origin.indexOf("://") + 3).equalsIgnoreCase(host))) {
            return "a request from another origin (Origin " + (origin.length() > 100 ? origin.substring(0, 100) : origin) + ")";
        }
        return null;
    }

    private void refuse(Message message, HttpServerRequest request, String why) {
        refusalLog.refused(401, request.method() + " " + request.path(), why);
        message.setHeader("WWW-Authenticate", "Bearer realm=\"chat-intake status\"");
        String accept = request.getHeader("Accept");
        if (request.method() == HttpMethod.GET && accept != null && accept.contains("text/html")) {
            // A browser gets the sign-in form: the token travels in a POST body, not in an address.
            message.setHeader("Content-Security-Policy",
                    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'");
            message.setHeader("X-Frame-Options", "DENY");
            answer(message, 401, "text/html; charset=utf-8", "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>chat-intake status:"
                    + " sign in</title></head><body><form id=\"login\" method=\"post\" action=\"" + PATH.substring(1) + "/"
                    + Action.LOGIN.path + "\"><label>Status token: <input id=\"login-token\" name=\"token\" type=\"password\""
                    + " autocomplete=\"current-password\"></label> <button id=\"login-button\">sign in</button></form></body></html>\n");
            return;
        }
        answer(message, 401, TEXT, "The status page needs its token: Authorization: Bearer <token>, or open " + PATH
                + "?token=<token> once in a browser (or sign in with the form a browser gets). Nothing changed.\n");
    }

    private static int page(HttpServerRequest request, String name) {
        String value = request.getParam(name);
        return value != null && value.matches("\\d{1,6}") ? Integer.parseInt(value) : 0;
    }

    /** Constant time: both sides are hashed to the same length first, so not even the length leaks. */
    private boolean matches(String offered) {
        if (offered == null || offered.isEmpty()) {
            return false;
        }
        return MessageDigest.isEqual(sha256(offered), sha256(token.orElseThrow().reveal()));
    }

    private static byte[] sha256(String text) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM has SHA-256", e);
        }
    }

    /** 303: the browser follows with a GET, so a reload never posts again. The location is relative, as proxies may prefix the path. */
    private static void redirect(Message message, String location, String body) {
        message.setHeader("Location", location);
        answer(message, 303, TEXT, body);
    }

    private static void answer(Message message, int status, String contentType, String body) {
        message.setHeader(Exchange.HTTP_RESPONSE_CODE, status);
        message.setHeader(Exchange.CONTENT_TYPE, contentType);
        message.setBody(body);
    }

    /**
     * One log line for a refused request, never with what was offered; a page left open with a
     * session that expired reloads every few seconds, so repeats within a minute are counted and
     * said in the next line instead.
     */
    private static final class RefusalLog {
        private static final Duration QUIET = Duration.ofMinutes(1);
        private long lastLogged;
        private int unsaid;

        synchronized void refused(int status, String request, String why) {
            long now = System.nanoTime();
            if (lastLogged != 0 && now - lastLogged < QUIET.toNanos()) {
                unsaid++;
                return;
            }
            LOG.warn("status page: {} for {}: {} (the offered value is not logged); nothing shown{}", status, request, why,
                    unsaid == 0 ? "" : " (" + unsaid + " more refusal(s) in the minute before)");
            lastLogged = now;
            unsaid = 0;
        }
    }
}
