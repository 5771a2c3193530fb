package io.chatintake.app;

import io.vertx.ext.web.Route;
import org.apache.camel.CamelContext;
import org.apache.camel.component.platform.http.vertx.VertxPlatformHttpRouter;
import org.apache.camel.spi.CamelEvent;

/**
 * While the runner starts, waits for its database, or stops, and while a route file is reloaded, a
 * request that no running route takes is answered 503 with {@code Retry-After}, not 404: the HTTP
 * server listens from the start of the context's services, before the routes have started (and
 * until after they stop), so a webhook's route may just not run yet; a reload removes a file's
 * routes before it adds their new version. Providers retry a 503 but dead-letter a 404 (UnifyPort
 * does), which would lose the delivery. The runner opens it once its routes run ({@link #open});
 * from then on, outside a reload, the gate is not on the router at all, so an unknown path is a
 * 404 and a known path with another method a 405, as Vert.x answers them.
 */
final class StartingHttpGate extends RouterEventNotifier {
    static final String RETRY_AFTER_SECONDS = "5";
    static final String ANSWER = "chat-intake is starting or stopping: nothing was stored, retry later\n";

    private Route gate;
    private boolean serving;
    /** Reloads in progress: each closes the gate until it has swapped its routes. */
    private int reloading;

    StartingHttpGate(CamelContext context) {
        super(context);
    }

    @Override
    public synchronized void notify(CamelEvent event) {
        if (event instanceof CamelEvent.CamelContextStoppingEvent) {
            serving = false;
            close(mainRouter());
        } else if (!serving) {
            // Starting: the server is up with the context's services, found at the first event after it.
            close(mainRouter());
        }
    }

    /** Every route runs: from now on a path no route takes is Vert.x's 404 or 405. */
    synchronized void open() {
        serving = true;
        if (reloading == 0) {
            removeGate();
        }
    }

    /** A route file's routes are about to be swapped: their paths answer 503 until {@link #reloaded}. */
    synchronized void reloading() {
        reloading++;
        close(mainRouter());
    }

    /** The swap {@link #reloading} announced has ended, loaded or not. */
    synchronized void reloaded() {
        reloading--;
        if (reloading == 0 && serving) {
            removeGate();
        }
    }

    private void removeGate() {
        if (gate != null) {
            gate.remove();
            gate = null;
        }
    }

    private void close(VertxPlatformHttpRouter router) {
        if (router == null || gate != null) {
            return;
        }
        // Last in order: every running route's own path is matched before this one.
        gate = router.route().order(Integer.MAX_VALUE).handler(request -> request.response().setStatusCode(503)
                .putHeader("Retry-After", RETRY_AFTER_SECONDS).putHeader("Content-Type", "text/plain; charset=utf-8").end(ANSWER));
    }
}
