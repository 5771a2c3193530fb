package io.chatintake.work;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.apache.camel.CamelContext;

/**
 * The kinds of work this process has a handler for: those given at construction, else one bound
 * in the Camel registry (a channel configured in a route file, webhook-inbox, registers its kind
 * there when its route starts). Other kinds are left for a process that has one.
 */
final class HandlerSources {
    private final CamelContext camel;
    private final Map<String, WorkSource> given;

    HandlerSources(CamelContext camel, List<WorkSource> sources) {
        this.camel = camel;
        this.given = sources.stream().collect(Collectors.toMap(WorkSource::kind, s -> s));
    }

    Set<String> kinds() {
        Set<String> kinds = new TreeSet<>(given.keySet());
        camel.getRegistry().findByType(WorkSource.class).forEach(source -> kinds.add(source.kind()));
        return kinds;
    }

    /** The kind's source, or null when no handler is configured for it here. */
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
