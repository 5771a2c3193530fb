package io.chatintake.ops;

import io.chatintake.config.Settings;
import java.util.OptionalInt;
import org.apache.camel.CamelContext;
import org.apache.camel.component.platform.http.PlatformHttpComponent;
import org.apache.camel.component.platform.http.vertx.VertxPlatformHttpEngine;

/**
 * {@code chat-intake.management.port}: health ({@code /observe/*}), metrics and {@code /status} on
 * a port of their own, so that the webhook port, which the internet reaches, serves webhooks only
 * and no route a team adds shares an origin with the status page. The same as the HTTP port (the
 * default) keeps today's single port. Camel's management server listens there
 * ({@code camel.management.port}); the status page's routes reach its router through a
 * platform-http component of their own, {@value #COMPONENT}.
 */
public final class ManagementPort {
    public static final String KEY = "chat-intake.management.port";
    static final String COMPONENT = "management-http";
    private static final String HTTP_PORT = "chat-intake.http.port";

    private ManagementPort() {
    }

    /** The management port when it is apart from the HTTP port; empty when everything shares the HTTP port. */
    public static OptionalInt apart(Settings settings) {
        int http = settings.getInt(HTTP_PORT);
        // Not set: everything shares the HTTP port.
        int management = settings.get(KEY).isPresent() ? settings.getInt(KEY) : http;
        return management == http ? OptionalInt.empty() : OptionalInt.of(management);
    }

    /** The component whose {@code <component>:/path} routes are served on the management port: platform-http itself without one. */
    static String component(CamelContext context, Settings settings) {
        OptionalInt port = apart(settings);
        if (port.isEmpty()) {
            return "platform-http";
        }
        synchronized (ManagementPort.class) {
            if (context.hasComponent(COMPONENT) == null) {
                VertxPlatformHttpEngine engine = new OnPort(port.getAsInt());
                engine.setCamelContext(context);
                PlatformHttpComponent component = new PlatformHttpComponent();
                component.setEngine(engine);
                context.addComponent(COMPONENT, component);
            }
        }
        return COMPONENT;
    }

    /** platform-http's Vert.x engine, bound to the router of the management server instead of the main one. */
    private static final class OnPort extends VertxPlatformHttpEngine {
        private final int port;

        OnPort(int port) {
            this.port = port;
        }

        @Override
        public int getServerPort() {
            return port;
        }

        /** Not bound as the registry's platform-http-engine, as the engine does: platform-http itself would take it. */
        @Override
        protected void doInit() {
        }
    }
}
