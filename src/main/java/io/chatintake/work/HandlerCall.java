package io.chatintake.work;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.Route;
import org.apache.camel.spi.UnitOfWork;
import org.apache.camel.support.DefaultExchange;

/**
 * Sends an item's exchange to its handler route and waits for it at most a claim's time. A route
 * whose asynchronous step never completes the exchange (a callback lost in a component) would
 * otherwise hold the worker for good, and with it every chat it claimed; the exchange is given up
 * on instead, and its item fails this attempt, retried or parked as any failure is. A handler that
 * runs synchronously completes on the worker's thread, as a plain send would.
 */
final class HandlerCall {
    /** A handler exchange given up on: which route and step it was waiting in. */
    static final class NoAnswerException extends RuntimeException {
        NoAnswerException(String message) {
            super(message, null, false, false);
        }
    }

    private final CamelContext camel;
    private final Duration limit;

    HandlerCall(CamelContext camel, Duration limit) {
        this.camel = camel;
        this.limit = limit;
    }

    /**
     * Runs the exchange through the handler route of {@code consumer}, as {@code direct:} hands an
     * exchange to its consumer.
     *
     * @return the exchange as the handler route left it; or, given up on (no answer within the
     *         limit, or this worker stopping meanwhile), a new exchange that carries why, since the
     *         one given up on may still be changed by whoever holds it
     */
    Exchange send(KindHandler consumer, Exchange exchange) {
        CompletableFuture<Exchange> answered = new CompletableFuture<>();
        exchange.getExchangeExtension().setFromEndpoint(consumer.endpoint());
        exchange.getExchangeExtension().setFromRouteId(consumer.routeId());
        try {
            consumer.processor().process(exchange, doneSync -> answered.complete(exchange));
        } catch (RuntimeException e) {
            exchange.setException(e);
            return exchange;
        }
        String endpointUri = consumer.endpoint().getEndpointUri();
        try {
            return answered.get(limit.toNanos(), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            exchange.setException(e.getCause());
            return exchange;
        } catch (TimeoutException e) {
            return givenUp(new NoAnswerException("no answer from the handler within " + limit.toSeconds() + " s, waiting in "
                    + whereItWaits(exchange, endpointUri) + "; given up on"));
        } catch (InterruptedException e) {
            // The dispatcher stops: the item runs again, here or elsewhere.
            return givenUp(e);
        }
    }

    private Exchange givenUp(Exception why) {
        Exchange instead = new DefaultExchange(camel);
        instead.setException(why);
        return instead;
    }

    /** "route album-child, step album-aggregator (albums.yaml:14)", as far as the exchange tells. */
    static String whereItWaits(Exchange exchange, String endpointUri) {
        UnitOfWork unitOfWork = exchange.getUnitOfWork();
        Route route = unitOfWork == null ? null : unitOfWork.getRoute();
        String routeId = route != null ? route.getRouteId() : exchange.getFromRouteId();
        String step = exchange.getExchangeExtension().getHistoryNodeId();
        String source = exchange.getExchangeExtension().getHistoryNodeSource();
        return (routeId == null ? "the route of " + endpointUri : "route " + routeId)
                + (step == null ? "" : ", step " + step) + (source == null ? "" : " (" + source + ")");
    }
}
