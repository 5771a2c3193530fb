package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.sim.AdjustableClock;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The status page's "refused in the last hour": the counter minus its value an hour ago, per minute samples. */
class RecentRefusalsTest {
    private final MeterRegistry registry = new SimpleMeterRegistry();
    private final AdjustableClock clock = new AdjustableClock();
    private final RecentRefusals refusals = new RecentRefusals(clock);

    @Test
    void onlyRefusalsOfTheLastHourCountAndAcceptedDeliveriesNever() {
        badSignature().increment(5);
        accepted().increment(100);
        assertThat(refusals.lastHour(registry)).as("a process younger than an hour: since its start")
                .containsExactly(Map.entry(new RecentRefusals.Refusal("unifyport", "ws", "401", "bad_signature"), 5L));

        for (int minute = 0; minute < 61; minute++) {
            clock.advance(Duration.ofMinutes(1));
            refusals.sample(registry);
        }
        badSignature().increment(3);
        tooLarge().increment();

        assertThat(refusals.lastHour(registry)).containsExactly(
                Map.entry(new RecentRefusals.Refusal("unifyport", "ws", "401", "bad_signature"), 3L),
                Map.entry(new RecentRefusals.Refusal("unifyport", "ws", "413", "too_large"), 1L));

        for (int minute = 0; minute < 61; minute++) {
            clock.advance(Duration.ofMinutes(1));
            refusals.sample(registry);
        }
        assertThat(refusals.lastHour(registry)).as("an hour later, they are out of the window").isEmpty();
    }

    private Counter badSignature() {
        return counter("401", "bad_signature");
    }

    private Counter tooLarge() {
        return counter("413", "too_large");
    }

    private Counter accepted() {
        return counter("200", "stored");
    }

    private Counter counter(String status, String outcome) {
        return registry.counter(RecentRefusals.DELIVERY_METRIC, "channel", "unifyport", "workspace", "ws", "status", status,
                "outcome", outcome);
    }
}
