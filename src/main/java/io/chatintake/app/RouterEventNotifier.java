package io.chatintake.app;

import org.apache.camel.CamelContext;
import org.apache.camel.component.platform.http.vertx.VertxPlatformHttpRouter;
import org.apache.camel.spi.CamelEvent;
import org.apache.camel.support.SimpleEventNotifierSupport;

/**
 * What changes the HTTP server's router as the context and its routes start and stop: the server
 * listens from the start of the context's services, before any route runs, so its router is found
 * at the first context or route event after that.
 */
abstract class RouterEventNotifier extends SimpleEventNotifierSupport {
    protected final CamelContext context;

    RouterEventNotifier(CamelContext context) {
        this.context = context;
        setIgnoreExchangeEvents(true);
        setIgnoreStepEvents(true);
    }

    @Override
    public boolean isEnabled(CamelEvent event) {
        return event instanceof CamelEvent.CamelContextEvent || event instanceof CamelEvent.RouteEvent;
    }

    /** Bound under a name made of the port, which is the server's to choose: found by type; null before it starts. */
    protected VertxPlatformHttpRouter mainRouter() {
        return context.getRegistry().findByType(VertxPlatformHttpRouter.class).stream()
                .filter(VertxPlatformHttpRouter::isMainServer).findFirst().orElse(null);
    }
}
