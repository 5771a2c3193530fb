package io.chatintake.support;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Metrics;
import org.apache.camel.CamelContext;

/** The registry /observe/metrics serves (camel-micrometer's), or Micrometer's global one outside the runner. */
public final class MeterRegistryLookup {
    private MeterRegistryLookup() {
    }

    public static MeterRegistry of(CamelContext context) {
        MeterRegistry registry = context.getRegistry().lookupByNameAndType("metricsRegistry", MeterRegistry.class);
        if (registry == null) {
            registry = context.getRegistry().findSingleByType(MeterRegistry.class);
        }
        return registry != null ? registry : Metrics.globalRegistry;
    }
}
