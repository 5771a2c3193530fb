package io.chatintake.ops;

import io.chatintake.config.Secret;
import io.chatintake.config.Settings;
import io.chatintake.support.MeterRegistryLookup;
import io.chatintake.support.ProcessIdentity;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.apache.camel.CamelContext;
import org.apache.camel.CamelContextAware;
import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.apache.camel.Processor;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.support.service.ServiceSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code GET /status}: one HTML page a person reads at a glance ({@link StatusReport}). Off unless
 * {@code chat-intake.status.token} is set (404 saying how to turn it on); then the token is
 * required as {@code Authorization: Bearer <token>} or {@code ?token=}, compared in constant time
 * (401 otherwise). No request header is echoed back (the token would be).
 */
public final class StatusPage extends ServiceSupport implements Processor, CamelContextAware {
    private static final Logger LOG = LoggerFactory.getLogger(StatusPage.class);
    public static final String PATH = "/status";
    public static final String TOKEN = "chat-intake.status.token";
    public static final String REFRESH_SECONDS = "chat-intake.status.refresh-seconds";
    private static final String BEARER = "Bearer ";

    private final Optional<Secret> token;
    private final StatusReport report;
    private final RecentRefusals refusals = new RecentRefusals(Clock.systemUTC());
    private CamelContext context;
    private ScheduledExecutorService sampler;

    StatusPage(Settings settings, DataSource dataSource) {
        this.token = settings.secret(TOKEN);
        this.report = new StatusReport(dataSource, settings, Duration.ofSeconds(settings.getLong(REFRESH_SECONDS, 10)),
                ProcessIdentity.name());
    }

    /** The route serving the page, for the runner to add: {@code GET /status} on the HTTP port. */
    public static RouteBuilder route(Settings settings, DataSource dataSource) {
        StatusPage page = new StatusPage(settings, dataSource);
        return new RouteBuilder() {
            @Override
            public void configure() {
                from("platform-http:" + PATH + "?httpMethodRestrict=GET&muteException=true").routeId("status-page").process(page);
            }
        };
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
        if (token.isEmpty()) {
            LOG.info("status page: OFF ({} answers 404): set {} to turn it on", PATH, Settings.envName(TOKEN));
            return;
        }
        LOG.info("status page: on at {} (token required: Authorization: Bearer ... or ?token=...)", PATH);
        // Refusals are counted per minute whether or not anyone looks, so "the last hour" is an hour.
        sampler = context.getExecutorServiceManager().newSingleThreadScheduledExecutor(this, "status-page-sampler");
        sampler.scheduleAtFixedRate(() -> refusals.sample(MeterRegistryLookup.of(context)),
                0, RecentRefusals.SAMPLE_EVERY.toSeconds(), TimeUnit.SECONDS);
    }

    @Override
    protected void doStop() {
        if (sampler != null) {
            context.getExecutorServiceManager().shutdown(sampler);
            sampler = null;
        }
    }

    @Override
    public void process(Exchange exchange) {
        Message message = exchange.getMessage();
        String authorization = message.getHeader("Authorization", String.class);
        String queryToken = message.getHeader("token", String.class);
        message.removeHeaders("*");
        message.setHeader("Cache-Control", "no-store");
        if (token.isEmpty()) {
            answer(message, 404, "text/plain; charset=utf-8", "The status page is off. Set " + Settings.envName(TOKEN)
                    + " (" + TOKEN + ") to a long random value to turn it on, then open " + PATH + "?token=<value>.\n");
            return;
        }
        String offered = authorization != null && authorization.startsWith(BEARER) ? authorization.substring(BEARER.length()).trim() : queryToken;
        if (!matches(offered)) {
            message.setHeader("WWW-Authenticate", "Bearer realm=\"chat-intake status\"");
            answer(message, 401, "text/plain; charset=utf-8",
                    "The status page needs its token: Authorization: Bearer <token>, or " + PATH + "?token=<token>.\n");
            return;
        }
        try {
            String html = report.render(refusals.lastHour(MeterRegistryLookup.of(exchange.getContext())));
            // The page holds no link or script; the token in its own URL must not travel on as a referrer.
            message.setHeader("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'");
            message.setHeader("Referrer-Policy", "no-referrer");
            message.setHeader("X-Content-Type-Options", "nosniff");
            answer(message, 200, "text/html; charset=utf-8", html);
        } catch (SQLException e) {
            LOG.warn("status page: cannot read the database: {} (SQL state {})", e.getMessage(), e.getSQLState());
            answer(message, 503, "text/plain; charset=utf-8", "The database does not answer; the page shows again once it does.\n");
        }
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

    private static void answer(Message message, int status, String contentType, String body) {
        message.setHeader(Exchange.HTTP_RESPONSE_CODE, status);
        message.setHeader(Exchange.CONTENT_TYPE, contentType);
        message.setBody(body);
    }
}
