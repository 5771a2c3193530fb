package io.chatintake.work.component;

import io.chatintake.work.WorkConstants;
import org.apache.camel.Exchange;
import org.apache.camel.support.DefaultProducer;

/**
 * {@code to: "work:<kind>"}, the last step of an intake route: what intake stored was queued as
 * work of this kind in intake's own transaction, before the acknowledgement; this step names the
 * kind, checks that intake queued that one, and wakes the kind's handlers. It adds no round trip
 * to the database.
 */
public class WorkProducer extends DefaultProducer {
    public WorkProducer(WorkEndpoint endpoint) {
        super(endpoint);
    }

    @Override
    public WorkEndpoint getEndpoint() {
        return (WorkEndpoint) super.getEndpoint();
    }

    @Override
    public void process(Exchange exchange) {
        String kind = getEndpoint().getKind();
        String queued = exchange.getMessage().getHeader(WorkConstants.WORK_KIND, String.class);
        if (queued == null) {
            throw new IllegalStateException("work:" + kind + " ends an intake route: the exchange carries no " + WorkConstants.WORK_KIND
                    + " header, so nothing here was stored as work");
        }
        if (!queued.equals(kind)) {
            throw new IllegalStateException("intake stored its items as work of kind " + queued + ", but this step names work:" + kind);
        }
        getEndpoint().dispatcher().nudge();
    }
}
