package io.chatintake.app;

import org.apache.camel.CamelContext;
import org.apache.camel.component.platform.http.vertx.VertxPlatformHttpRouter;
import org.apache.camel.spi.CamelEvent;
import org.apache.camel.support.SimpleEventNotifierSupport;

/**
 * While the runner starts or stops, a request that no running route takes is answered 503 with
 * {@code Retry-After}, not 404: the HTTP server listens from its first route's start, before the
 * other routes have started (and until after they stop), so a webhook's route may just not run
 * yet. Providers retry a 503 but dead-letter a 404 (UnifyPort does), which would lose the delivery.
 * Once the runner runs, an unknown path is a 404 as usual.
 */
final class StartingHttpGate extends SimpleEventNotifierSupport {
    static final String RETRY_AFTER_SECONDS = "5";
    static final String ANSWER = "chat-intake is starting or stopping: nothing was stored, retry later\n";

    private final CamelContext context;
    private volatile boolean installed;

    StartingHttpGate(CamelContext context) {
        this.context = context;
        setIgnoreExchangeEvents(true);
        setIgnoreStepEvents(true);
    }

    /** The server starts with the context's services, before the routes: installed at the first event that finds it. */
    @Override
    public boolean isEnabled(CamelEvent event) {
        return !installed;
    }

    @Override
    public void notify(CamelEvent event) {
        // Bound under a name made of the port, which is the server's to choose: found by type.
        VertxPlatformHttpRouter router = context.getRegistry().findByType(VertxPlatformHttpRouter.class).stream()
                .filter(VertxPlatformHttpRouter::isMainServer).findFirst().orElse(null);
        if (router == null || installed) {
            return;
        }
        installed = true;
        // Last in order: every running route's own path is matched before this one.
        router.route().order(Integer.MAX_VALUE).handler(request -> {
            if (context.isStarted()) {
                request.next();
                return;
            }
            request.response().setStatusCode(503).putHeader("Retry-After", RETRY_AFTER_SECONDS)
                    .putHeader("Content-Type", "text/plain; charset=utf-8").end(ANSWER);
        });
    }
}
