package io.chatintake.work.component;

import io.chatintake.work.HandlerRouteErrors;
import io.chatintake.work.KindHandler;
import io.chatintake.work.KindRules;
import io.chatintake.work.WorkDispatcher;
import org.apache.camel.AsyncProcessor;
import org.apache.camel.Endpoint;
import org.apache.camel.Processor;
import org.apache.camel.Route;
import org.apache.camel.support.DefaultConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A kind's handler route in this process. While it is started, the work dispatcher claims items
 * of its kind and runs them through it; stopped, no more are claimed here (items wait as pending,
 * nothing is parked) and those claimed but not run go back unspent. Failures are the
 * dispatcher's to handle (one line, retry, defer, park), so its route needs no error handler of
 * its own ({@link HandlerRouteErrors}).
 */
public class WorkConsumer extends DefaultConsumer implements KindHandler {
    private static final Logger LOG = LoggerFactory.getLogger(WorkConsumer.class);

    public WorkConsumer(WorkEndpoint endpoint, Processor processor) {
        super(endpoint, processor);
    }

    @Override
    public WorkEndpoint getEndpoint() {
        return (WorkEndpoint) super.getEndpoint();
    }

    @Override
    protected void doStart() throws Exception {
        for (Route other : getEndpoint().getCamelContext().getRoutes()) {
            if (other.getConsumer() instanceof KindHandler consumer && consumer != this && consumer.kind().equals(kind())
                    && other.getConsumer() instanceof WorkConsumer running && (running.isStarted() || running.isStarting())) {
                throw new IllegalStateException("work:" + kind() + " is consumed by two routes, " + consumer.where() + " and " + where()
                        + ": one kind has one handler route per process; remove or rename one of them");
            }
        }
        super.doStart();
        LOG.info("work: {} runs work of kind {} in this process", where(), kind());
        WorkDispatcher.nudge(getEndpoint().getCamelContext());
    }

    @Override
    public String kind() {
        return getEndpoint().getKind();
    }

    @Override
    public KindRules rules(KindRules defaults) {
        return getEndpoint().getConfiguration().rules(defaults);
    }

    @Override
    public Endpoint endpoint() {
        return getEndpoint();
    }

    @Override
    public String routeId() {
        return getRouteId();
    }

    @Override
    public AsyncProcessor processor() {
        return getAsyncProcessor();
    }

    @Override
    public String where() {
        Route route = getRoute();
        if (route == null) {
            return "a route from " + getEndpoint().getEndpointUri();
        }
        String location = route.getSourceLocationShort();
        return "route " + route.getRouteId() + (location == null ? "" : " (" + location + ")");
    }
}
