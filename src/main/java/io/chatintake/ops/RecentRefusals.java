package io.chatintake.ops;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * Webhook deliveries this process answered with anything but 200, by channel and reason, over
 * the last hour. Refused deliveries are never stored (unauthenticated input), so the figures come
 * from the delivery counter every webhook intake keeps; samples of it, taken once a minute, give
 * the count an hour ago to subtract.
 */
final class RecentRefusals {
    /** The counter the webhook intakes increment per answer (tags channel, workspace, status, outcome). */
    static final String DELIVERY_METRIC = "chat.intake.webhook.deliveries";
    static final Duration WINDOW = Duration.ofHours(1);
    static final Duration SAMPLE_EVERY = Duration.ofMinutes(1);

    /** One kind of refusal: which channel and workspace, which answer, why. */
    record Refusal(String channel, String workspace, String status, String reason) implements Comparable<Refusal> {
        @Override
        public int compareTo(Refusal o) {
            return (channel + '\0' + workspace + '\0' + status + '\0' + reason)
                    .compareTo(o.channel + '\0' + o.workspace + '\0' + o.status + '\0' + o.reason);
        }
    }

    private record Sample(Instant at, Map<Refusal, Double> totals) {
    }

    private final Clock clock;
    private final Deque<Sample> samples = new ArrayDeque<>();

    RecentRefusals(Clock clock) {
        this.clock = clock;
    }

    /** Takes a sample when the last one is a minute old (called by a timer and by every render). */
    synchronized void sample(MeterRegistry registry) {
        Instant now = clock.instant();
        if (samples.isEmpty() || !samples.getLast().at().plus(SAMPLE_EVERY).isAfter(now)) {
            samples.addLast(new Sample(now, totals(registry)));
        }
        // Keep the newest sample older than the window: it is the baseline.
        while (samples.size() > 1) {
            Sample oldest = samples.removeFirst();
            if (samples.getFirst().at().isAfter(now.minus(WINDOW))) {
                samples.addFirst(oldest);
                break;
            }
        }
    }

    /**
     * Refusals within the last hour; when this process is younger than that, since it started
     * (the counters started at zero then).
     */
    synchronized Map<Refusal, Long> lastHour(MeterRegistry registry) {
        sample(registry);
        Instant from = clock.instant().minus(WINDOW);
        Map<Refusal, Double> baseline = samples.getFirst().at().isAfter(from) ? Map.of() : samples.getFirst().totals();
        Map<Refusal, Long> result = new TreeMap<>();
        totals(registry).forEach((refusal, total) -> {
            long recent = Math.round(total - baseline.getOrDefault(refusal, 0.0));
            if (recent > 0) {
                result.put(refusal, recent);
            }
        });
        return result;
    }

    private static Map<Refusal, Double> totals(MeterRegistry registry) {
        Map<Refusal, Double> totals = new HashMap<>();
        for (Counter counter : registry.find(DELIVERY_METRIC).counters()) {
            String status = counter.getId().getTag("status");
            if (status != null && !status.equals("200")) {
                totals.merge(new Refusal(tag(counter, "channel"), tag(counter, "workspace"), status, tag(counter, "outcome")),
                        counter.count(), Double::sum);
            }
        }
        return totals;
    }

    private static String tag(Counter counter, String name) {
        String value = counter.getId().getTag(name);
        return value == null ? "" : value;
    }
}
