package io.chatintake.work;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.apache.camel.CamelContext;
import org.apache.camel.Route;
import org.apache.camel.support.service.ServiceHelper;

/**
 * The kinds of work this process runs: those whose {@code work:<kind>} route has a started
 * consumer here, and whose rows a {@link WorkSource} can read (given at construction, or bound in
 * the Camel registry by a channel configured in a route file, as webhook-inbox does). Other kinds
 * are left for a process that has a handler for them.
 */
final class HandlerSources {
    private final CamelContext camel;
    private final Map<String, WorkSource> given;
    private final Function<String, KindRules> defaults;

    /** @param defaults the configuration's rules of a kind, for what its route does not set */
    HandlerSources(CamelContext camel, Iterable<WorkSource> sources, Function<String, KindRules> defaults) {
        this.camel = camel;
        this.given = new ConcurrentHashMap<>();
        sources.forEach(source -> given.put(source.kind(), source));
        this.defaults = defaults;
    }

    /** The started {@code work:} consumers of this context, by kind. */
    private Map<String, KindHandler> consumers() {
        Map<String, KindHandler> consumers = new HashMap<>();
        for (Route route : camel.getRoutes()) {
            if (route.getConsumer() instanceof KindHandler consumer && ServiceHelper.isStarted(route.getConsumer())) {
                consumers.putIfAbsent(consumer.kind(), consumer);
            }
        }
        return consumers;
    }

    /** The kinds with a started handler route here whose rows can be read. */
    Set<String> kinds() {
        Set<String> kinds = new TreeSet<>();
        for (String kind : consumers().keySet()) {
            if (source(kind) != null) {
                kinds.add(kind);
            }
        }
        return kinds;
    }

    /** The kinds with a started handler route here whose items of one conversation run in order. */
    Set<String> orderedKinds() {
        Set<String> ordered = new TreeSet<>();
        consumers().forEach((kind, consumer) -> {
            if (rules(consumer).ordered()) {
                ordered.add(kind);
            }
        });
        return ordered;
    }

    /** The kind's handler route, or null while none runs here. */
    KindHandler consumer(String kind) {
        return consumers().get(kind);
    }

    /** The kind's rules: its route's options, the configuration's where none runs. */
    KindRules rules(String kind) {
        KindHandler consumer = consumer(kind);
        return consumer != null ? rules(consumer) : defaults.apply(kind);
    }

    private KindRules rules(KindHandler consumer) {
        return consumer.rules(defaults.apply(consumer.kind()));
    }

    /** The kind's source, or null when nothing here can read its rows. */
    WorkSource source(String kind) {
        WorkSource source = given.get(kind);
        return source != null ? source : camel.getRegistry().findByType(WorkSource.class).stream()
                .filter(s -> s.kind().equals(kind)).findFirst().orElse(null);
    }

    /** How many items of the kind are read from their rows together. */
    int loadTogether(String kind) {
        WorkSource source = source(kind);
        return source == null ? 1 : Math.max(1, source.loadTogether());
    }
}
