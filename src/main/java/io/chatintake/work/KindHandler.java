package io.chatintake.work;

import org.apache.camel.AsyncProcessor;
import org.apache.camel.Endpoint;

/** A started handler route of one kind of work, as the dispatcher finds it among the context's routes (the {@code work:} component's consumer). */
public interface KindHandler {
    String kind();

    /** The kind's rules: the route's options where set, {@code defaults} elsewhere. */
    KindRules rules(KindRules defaults);

    /** "route album-child (albums.yaml:14)". */
    String where();

    Endpoint endpoint();

    String routeId();

    /** The route, as its consumer hands it exchanges. */
    AsyncProcessor processor();
}
