package io.chatintake.app;

import io.chatintake.channel.webhook.WebhookInboxEndpoint;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalLong;
import java.util.regex.Pattern;
import org.apache.camel.CamelContext;
import org.apache.camel.EndpointAware;
import org.apache.camel.Route;
import org.apache.camel.component.platform.http.PlatformHttpEndpoint;
import org.apache.camel.component.platform.http.vertx.VertxPlatformHttpRouter;
import org.apache.camel.spi.CamelEvent;

/**
 * {@link HttpLimits} on the server's router, ahead of every route: a request must arrive in full
 * within the request timeout (408), multipart bodies are refused before they are read (415) unless
 * uploads are on, and a webhook route's body is read by a body handler capped at that route's
 * {@code maxBodyBytes}, so an oversized body is refused (413) at its Content-Length or as soon as
 * it grows past the cap, not after the server-wide ceiling was buffered. A refusal sent while the
 * body still streams in closes the connection: the rest is never read.
 */
final class RequestLimits extends RouterEventNotifier {
    /** First of all: the deadline and the connection's fate are set before any body is read. */
    private static final int GUARD_ORDER = Integer.MIN_VALUE;
    /** Then a webhook route's own cap: platform-http's body handler, later, sees the body read and skips. */
    private static final int BODY_ORDER = Integer.MIN_VALUE + 1;
    private static final Pattern PATH_PARAMETER = Pattern.compile("\\{([^/}]+)}");

    private final HttpLimits limits;
    private final Map<String, io.vertx.ext.web.Route> bodyCaps = new HashMap<>();
    private VertxPlatformHttpRouter guarded;

    RequestLimits(CamelContext context, HttpLimits limits) {
        super(context);
        this.limits = limits;
    }

    @Override
    public synchronized void notify(CamelEvent event) {
        VertxPlatformHttpRouter router = mainRouter();
        if (router == null) {
            return;
        }
        if (guarded != router) {
            router.route().order(GUARD_ORDER).handler(this::guard).failureHandler(this::tooLarge);
            guarded = router;
        }
        if (event instanceof CamelEvent.RouteStartingEvent starting) {
            capBody(router, starting.getRoute());
        } else if (event instanceof CamelEvent.RouteStoppedEvent || event instanceof CamelEvent.RouteRemovedEvent) {
            io.vertx.ext.web.Route cap = bodyCaps.remove(((CamelEvent.RouteEvent) event).getRoute().getRouteId());
            if (cap != null) {
                cap.remove();
            }
        }
    }

    private void guard(RoutingContext ctx) {
        HttpServerRequest request = ctx.request();
        if (!limits.fileUploads() && multipart(request)) {
            refuse(ctx, 415, "multipart_not_accepted");
            return;
        }
        if (!request.isEnded()) {
            long deadline = ctx.vertx().setTimer(limits.requestTimeout().toMillis(), id -> {
                if (!request.isEnded()) {
                    refuse(ctx, 408, "request_timeout");
                }
            });
            ctx.addHeadersEndHandler(v -> {
                if (!request.isEnded()) {
                    ctx.response().putHeader(HttpHeaders.CONNECTION, HttpHeaders.CLOSE);
                }
            });
            ctx.addEndHandler(done -> {
                ctx.vertx().cancelTimer(deadline);
                if (!request.isEnded()) {
                    // The body handler would report the close as the route's failure, an error line per refusal.
                    request.exceptionHandler(closed -> { });
                    request.connection().close();
                }
            });
        }
        ctx.next();
    }

    /** The body handlers' 413, answered here: Vert.x would log each one as an error in the router. */
    private void tooLarge(RoutingContext ctx) {
        if (ctx.statusCode() == 413) {
            refuse(ctx, 413, "body_too_large");
        } else {
            ctx.next();
        }
    }

    /** A webhook-inbox route's body is read by a handler capped at the route's own maxBodyBytes. */
    private void capBody(VertxPlatformHttpRouter router, Route route) {
        if (!(route.getEndpoint() instanceof PlatformHttpEndpoint http)) {
            return;
        }
        OptionalLong cap = route.filter("*").stream().filter(EndpointAware.class::isInstance)
                .map(p -> ((EndpointAware) p).getEndpoint()).filter(WebhookInboxEndpoint.class::isInstance)
                .mapToLong(e -> ((WebhookInboxEndpoint) e).getMaxBodyBytes()).min();
        if (cap.isEmpty()) {
            return;
        }
        BodyHandler body = BodyHandler.create(false).setBodyLimit(Math.min(cap.getAsLong(), limits.maxBodyBytes()));
        io.vertx.ext.web.Route added = router.route(vertxPath(http)).order(BODY_ORDER).handler(ctx -> {
            // A provider signs raw bytes; multipart parts never reach the body a signature covers.
            if (multipart(ctx.request())) {
                refuse(ctx, 415, "multipart_not_accepted");
            } else {
                body.handle(ctx);
            }
        });
        io.vertx.ext.web.Route replaced = bodyCaps.put(route.getRouteId(), added);
        if (replaced != null) {
            replaced.remove();
        }
    }

    /** The path as platform-http-vertx gives it to Vert.x: {name} parameters as :name, a prefix match as *. */
    static String vertxPath(PlatformHttpEndpoint endpoint) {
        String path = PATH_PARAMETER.matcher(endpoint.getPath()).replaceAll(":$1");
        return endpoint.isMatchOnUriPrefix() && !path.endsWith("*") ? path + "*" : path;
    }

    private static boolean multipart(HttpServerRequest request) {
        String type = request.getHeader(HttpHeaders.CONTENT_TYPE);
        return type != null && type.toLowerCase(Locale.ROOT).startsWith("multipart/");
    }

    private static void refuse(RoutingContext ctx, int status, String error) {
        if (ctx.response().headWritten()) {
            ctx.request().connection().close();
            return;
        }
        ctx.response().setStatusCode(status).putHeader(HttpHeaders.CONTENT_TYPE, "application/json")
                .putHeader(HttpHeaders.CONNECTION, HttpHeaders.CLOSE).end("{\"error\":\"" + error + "\"}");
    }
}
