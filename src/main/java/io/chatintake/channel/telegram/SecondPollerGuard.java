package io.chatintake.channel.telegram;

import io.chatintake.config.Secret;
import java.util.Collection;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.camel.CamelContext;
import org.apache.camel.Endpoint;
import org.apache.camel.Route;
import org.apache.camel.component.telegram.TelegramEndpoint;
import org.apache.camel.support.LifecycleStrategySupport;

/**
 * Refuses a route that consumes {@code telegram:bots} (camel-telegram's consumer) with the token
 * of a bot that {@code telegram-inbox} polls: that consumer confirms updates before they are
 * stored and keeps its offset only in memory, and two pollers displace each other (409). Checked
 * as routes are added, before any consumer starts, at start and on reload alike.
 */
public final class SecondPollerGuard extends LifecycleStrategySupport {
    private record Poller(String routeId, String description, boolean inbox, Secret token) {
    }

    private final Map<String, Poller> pollers = new ConcurrentHashMap<>();

    private SecondPollerGuard() {
    }

    public static void install(CamelContext context) {
        context.addLifecycleStrategy(new SecondPollerGuard());
    }

    @Override
    public void onRoutesAdd(Collection<Route> routes) {
        for (Route route : routes) {
            Optional<Poller> added = poller(route.getRouteId(), route.getEndpoint());
            if (added.isEmpty()) {
                continue;
            }
            Poller poller = added.get();
            for (Poller other : pollers.values()) {
                if (other.inbox() != poller.inbox() && other.token().equals(poller.token())) {
                    Poller inbox = poller.inbox() ? poller : other;
                    Poller stock = poller.inbox() ? other : poller;
                    throw new IllegalStateException("route '" + stock.routeId() + "' consumes " + stock.description()
                            + " with the token of the bot that route '" + inbox.routeId() + "' polls through " + inbox.description()
                            + "; refused: it would confirm updates outside storage, with its offset in memory"
                            + " (receive with telegram-inbox only, reply with telegram-bot)");
                }
            }
            pollers.put(poller.routeId(), poller);
        }
    }

    @Override
    public void onRoutesRemove(Collection<Route> routes) {
        routes.forEach(route -> pollers.remove(route.getRouteId()));
    }

    private static Optional<Poller> poller(String routeId, Endpoint endpoint) {
        if (endpoint instanceof TelegramInboxEndpoint inbox) {
            return inbox.resolveToken().map(token -> new Poller(routeId, "telegram-inbox:" + inbox.getBotName(), true, token));
        }
        if (endpoint instanceof TelegramEndpoint stock) {
            String token = stock.getConfiguration().getAuthorizationToken();
            return token == null || token.isBlank() ? Optional.empty()
                    : Optional.of(new Poller(routeId, "telegram:" + stock.getConfiguration().getType(), false, Secret.of(token.trim())));
        }
        return Optional.empty();
    }
}
