package io.chatintake.app;

import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.impl.VertxInternal;
import io.vertx.core.impl.VertxWrapper;
import java.util.concurrent.TimeUnit;
import org.apache.camel.spi.CamelEvent;
import org.apache.camel.support.SimpleEventNotifierSupport;

/**
 * The Vert.x platform-http's server is built with (it takes the one in the registry): every HTTP
 * server it creates gets {@link HttpLimits}' options. platform-http-vertx 4.18 builds its
 * {@code HttpServerOptions} itself, with Vert.x's defaults (cleartext HTTP/2 on, no idle timeout),
 * and camel.server.* has no key for them. {@link VertxWrapper} is Vert.x's own base for this.
 */
final class HttpServerVertx extends VertxWrapper {
    private final HttpLimits limits;

    HttpServerVertx(HttpLimits limits) {
        super((VertxInternal) Vertx.vertx());
        this.limits = limits;
    }

    @Override
    public HttpServer createHttpServer(HttpServerOptions options) {
        return super.createHttpServer(limits.apply(new HttpServerOptions(options)));
    }

    @Override
    public HttpServer createHttpServer() {
        return createHttpServer(new HttpServerOptions());
    }

    /**
     * platform-http closes only a Vert.x it made itself. Closed once the context has stopped: its
     * server is a service that Camel stops after every service the configuration adds.
     */
    static final class Closing extends SimpleEventNotifierSupport {
        private final HttpServerVertx vertx;

        Closing(HttpServerVertx vertx) {
            this.vertx = vertx;
            setIgnoreExchangeEvents(true);
            setIgnoreStepEvents(true);
            setIgnoreRouteEvents(true);
        }

        @Override
        public boolean isEnabled(CamelEvent event) {
            return event instanceof CamelEvent.CamelContextStoppedEvent;
        }

        @Override
        public void notify(CamelEvent event) throws Exception {
            vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }
}
