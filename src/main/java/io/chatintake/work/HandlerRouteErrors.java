package io.chatintake.work;

import org.apache.camel.LoggingLevel;
import org.apache.camel.model.errorhandler.DefaultErrorHandlerDefinition;
import org.apache.camel.model.ModelLifecycleStrategy;
import org.apache.camel.model.RouteDefinition;
import org.apache.camel.model.RouteTemplateDefinition;

/**
 * Every {@code work:} route gets the work engine's failure handling from its consumer, without
 * naming a route configuration: a failure goes back to the dispatcher as it is, which tells it in
 * one line (next attempt, undeliverable, retry-after; nothing for a deferral) and once at WARN,
 * with Camel's message history, when the item is parked. Camel's own report of the failed
 * exchange is therefore at DEBUG and without its stack trace, so an expected failure is not told
 * again at ERROR. The same
 * holds for a {@code direct:} route: its failure is its caller's to tell. A route that chose an
 * error handler or a route configuration keeps it.
 */
public final class HandlerRouteErrors implements ModelLifecycleStrategy {
    @Override
    public void onAddRouteDefinition(RouteDefinition route) {
        String from = route.getInput() == null ? null : route.getInput().getEndpointUri();
        if (from == null || !(from.startsWith("work:") || from.startsWith("direct:"))
                || route.isErrorHandlerFactorySet() || route.getRouteConfigurationId() != null) {
            return;
        }
        DefaultErrorHandlerDefinition quiet = new DefaultErrorHandlerDefinition();
        quiet.setLevel(LoggingLevel.DEBUG.name());
        quiet.getRedeliveryPolicy().setRetriesExhaustedLogLevel(LoggingLevel.DEBUG.name());
        // An expected failure (a 404 declared undeliverable, a refused call) is no place for a
        // stack trace, even at DEBUG: the dispatcher keeps those for what ends parked.
        quiet.getRedeliveryPolicy().setLogStackTrace("false");
        quiet.getRedeliveryPolicy().setLogRetryStackTrace("false");
        route.setErrorHandlerFactory(quiet);
    }

    @Override
    public void onRemoveRouteDefinition(RouteDefinition route) {
        // nothing kept per route
    }

    @Override
    public void onAddRouteTemplateDefinition(RouteTemplateDefinition template) {
        // routes made from a template are added as routes, and handled there
    }

    @Override
    public void onRemoveRouteTemplateDefinition(RouteTemplateDefinition template) {
        // as above
    }
}
