package io.chatintake.work;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.Collected;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class WorkMetricsTest {
    @Test
    void workersAllowedIsStillReadAfterAGarbageCollection() {
        MeterRegistry registry = new SimpleMeterRegistry();
        // A supplier nothing else holds, as the dispatcher's method reference.
        new WorkMetrics(null).start(registry, new AtomicInteger(3)::get);
        Gauge allowed = registry.get("chat_intake_work_workers_allowed").gauge();
        assertThat(allowed.value()).isEqualTo(3);

        Collected.atLeastOnce();

        assertThat(allowed.value()).as("not NaN, as a gauge holding its supplier weakly reads once it is collected").isEqualTo(3);
    }
}
