package io.chatintake.work.component;

import java.util.Map;
import org.apache.camel.Endpoint;
import org.apache.camel.spi.Metadata;
import org.apache.camel.spi.annotations.Component;
import org.apache.camel.support.DefaultComponent;

/**
 * {@code work:<kind>}: stored work of one kind. A route {@code from: "work:<kind>"} is the kind's
 * handler in this process: while it runs, the work dispatcher claims items of that kind and runs
 * each through it (in order per conversation, retried with backoff, deferred, parked); stopped or
 * removed, the items wait as pending. {@code to: "work:<kind>"} ends an intake route: it names the
 * kind its stored items were queued as, in intake's own transaction, and wakes the kind's handlers.
 */
@Component("work")
public class WorkComponent extends DefaultComponent {
    @Metadata(label = "advanced", description = "Defaults of every work endpoint's options; each endpoint may override them")
    private WorkConfiguration configuration = new WorkConfiguration();

    @Override
    protected Endpoint createEndpoint(String uri, String remaining, Map<String, Object> parameters) throws Exception {
        if (remaining == null || remaining.isBlank() || !remaining.matches("[a-z0-9][a-z0-9-]*")) {
            throw new IllegalArgumentException("work needs a kind of work in lower case, digits and '-': work:album-child, got '"
                    + remaining + "'");
        }
        WorkEndpoint endpoint = new WorkEndpoint(uri, this, remaining, configuration.copy());
        setProperties(endpoint, parameters);
        return endpoint;
    }

    public WorkConfiguration getConfiguration() {
        return configuration;
    }

    public void setConfiguration(WorkConfiguration configuration) {
        this.configuration = configuration;
    }
}
