package io.chatintake.work.component;

import io.chatintake.work.WorkConstants;
import io.chatintake.work.WorkDispatcher;
import org.apache.camel.Category;
import org.apache.camel.Consumer;
import org.apache.camel.Processor;
import org.apache.camel.Producer;
import org.apache.camel.spi.Metadata;
import org.apache.camel.spi.UriEndpoint;
import org.apache.camel.spi.UriParam;
import org.apache.camel.spi.UriPath;
import org.apache.camel.support.DefaultEndpoint;

/**
 * One kind of stored work. Consumed, it is the kind's handler route in this process; produced to,
 * it ends an intake route whose items were stored as this kind.
 */
@UriEndpoint(firstVersion = "0.1.0", scheme = "work", title = "Work", syntax = "work:kind", category = {Category.CORE},
        headersClass = WorkConstants.class)
public class WorkEndpoint extends DefaultEndpoint {
    @UriPath(description = "The kind of work, e.g. album-child, attachment, or a channel's own")
    @Metadata(required = true)
    private final String kind;
    @UriParam
    private WorkConfiguration configuration;

    public WorkEndpoint(String uri, WorkComponent component, String kind, WorkConfiguration configuration) {
        super(uri, component);
        this.kind = kind;
        this.configuration = configuration;
    }

    @Override
    public Consumer createConsumer(Processor processor) throws Exception {
        if (configuration.getMaxAttempts() != null && configuration.getMaxAttempts() < 1) {
            throw new IllegalArgumentException("work:" + kind + " maxAttempts must be at least 1, got " + configuration.getMaxAttempts());
        }
        WorkConsumer consumer = new WorkConsumer(this, processor);
        configureConsumer(consumer);
        return consumer;
    }

    @Override
    public Producer createProducer() {
        return new WorkProducer(this);
    }

    public String getKind() {
        return kind;
    }

    public WorkConfiguration getConfiguration() {
        return configuration;
    }

    public void setConfiguration(WorkConfiguration configuration) {
        this.configuration = configuration;
    }

    /** The dispatcher bound in this context; a work endpoint runs nothing without one. */
    WorkDispatcher dispatcher() {
        WorkDispatcher dispatcher = WorkDispatcher.of(getCamelContext());
        if (dispatcher == null) {
            throw new IllegalStateException("work:" + kind + " needs the work dispatcher (bound by the runner's configuration)");
        }
        return dispatcher;
    }
}
