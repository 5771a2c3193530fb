package io.chatintake.work;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntSupplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The work dispatcher's meters: handler time and attempts by kind and outcome, deferrals by
 * reason, outcomes dropped with a lost claim, workers allowed, and the depth of unfinished work.
 * Registered on the registry of the context a dispatcher starts in; its gauges go with it when it
 * stops, so a dispatcher started later on the same registry shows its own values.
 */
final class WorkMetrics {
    private static final Logger LOG = LoggerFactory.getLogger(WorkMetrics.class);
    private static final Duration DEPTH_REFRESH = Duration.ofSeconds(5);
    /** A count that takes longer (a backlog of many thousand items) is taken less often: at most about 1 % of the time. */
    private static final int DEPTH_COST_SHARE = 100;

    /**
     * Depth by kind and state of unfinished work (pending, running, failed, parked), for the
     * metrics; read at most every few seconds, not per scrape, through the partial index on
     * unfinished items, so the cost follows the backlog, not the history. Done work is counted by
     * {@code chat_intake_work_handler_seconds_count{outcome="done"}} instead.
     */
    static final String DEPTH = "SELECT kind, state, count(*) FROM work_item WHERE state NOT IN ('done', 'erased') GROUP BY kind, state";

    private final DataSource dataSource;
    private volatile MeterRegistry registry;
    private final Map<String, AtomicLong> depth = new ConcurrentHashMap<>();
    private final Queue<Gauge> gauges = new ConcurrentLinkedQueue<>();
    private final Map<String, Timer> handlerTimers = new ConcurrentHashMap<>();
    private final Map<String, Counter> counters = new ConcurrentHashMap<>();
    /** System.nanoTime() from which the depth may be counted again. */
    private long depthDueAt = System.nanoTime();

    WorkMetrics(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    void start(MeterRegistry registry, IntSupplier workersAllowed) {
        this.registry = registry;
        counters.clear();
        handlerTimers.clear();
        // Held strongly: nothing else keeps the supplier, and a gauge holds its object weakly by
        // default, so it read NaN after the next collection.
        gauges.add(Gauge.builder("chat_intake_work_workers_allowed", workersAllowed, IntSupplier::getAsInt).strongReference(true)
                .description("dispatcher threads that may claim or handle now: fewer while intake is behind its source").register(registry));
    }

    void stop() {
        for (Gauge gauge = gauges.poll(); gauge != null; gauge = gauges.poll()) {
            registry.remove(gauge);
        }
        depth.clear();
    }

    /** One run of an item's handler: its time by outcome, and an attempt unless it was deferred. */
    void handled(WorkItem item, RunResult outcome, long nanos) {
        handlerTimers.computeIfAbsent(item.kind() + "|" + outcome.state().stored(), k -> Timer.builder("chat_intake_work_handler_seconds")
                        .tag("kind", item.kind()).tag("outcome", outcome.state().stored()).register(registry))
                .record(nanos, TimeUnit.NANOSECONDS);
        if (!outcome.isDeferred()) {
            counters.computeIfAbsent("attempts|" + item.kind(), k -> Counter.builder("chat_intake_work_attempts")
                    .tag("kind", item.kind()).register(registry)).increment();
        }
    }

    void deferred(WorkItem item, DeferReason reason) {
        MeterRegistry meters = registry;
        if (meters != null) {
            counters.computeIfAbsent("deferrals|" + item.kind() + "|" + reason, k -> Counter.builder("chat_intake_work_deferrals")
                    .description("items that went back to wait for a limit's slot or a retry-after, their attempt not counted")
                    .tag("kind", item.kind()).tag("reason", reason.label()).register(meters)).increment();
        }
    }

    void dropped(String kind, int outcomes) {
        Counter.builder("chat_intake_work_outcomes_dropped").tag("kind", kind).register(registry).increment(outcomes);
    }

    void refreshDepth() {
        long started = System.nanoTime();
        synchronized (depth) {
            if (started - depthDueAt < 0) {
                return;
            }
            depthDueAt = started + DEPTH_REFRESH.toNanos();
        }
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(DEPTH);
             ResultSet rs = ps.executeQuery()) {
            long took = System.nanoTime() - started;
            synchronized (depth) {
                depthDueAt = started + Math.max(DEPTH_REFRESH.toNanos(), took * DEPTH_COST_SHARE);
            }
            depth.values().forEach(v -> v.set(0));
            while (rs.next()) {
                String kind = rs.getString(1);
                String state = rs.getString(2);
                depth.computeIfAbsent(kind + "|" + state, k -> {
                    AtomicLong value = new AtomicLong();
                    gauges.add(Gauge.builder("chat_intake_work_items", value, AtomicLong::get).tag("kind", kind).tag("state", state)
                            .register(registry));
                    return value;
                }).set(rs.getLong(3));
            }
        } catch (SQLException e) {
            LOG.debug("work: depth not refreshed: {}", e.getMessage());
        }
    }
}
