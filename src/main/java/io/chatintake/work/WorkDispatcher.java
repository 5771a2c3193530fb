package io.chatintake.work;

import io.chatintake.support.ProcessIdentity;
import io.chatintake.config.Settings;
import io.chatintake.support.MeterRegistryLookup;
import io.chatintake.support.Redactor;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.TreeSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.support.DefaultExchange;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the handler route of every stored work item and records the outcome in the same database:
 * done, or failed with exponential backoff and jitter, or parked after the last attempt. A guarded
 * effect's {@link EffectFailure} says more: not performed (retried, not before its time),
 * undeliverable (done for good) or ambiguous (parked at once for reconciliation). Any number
 * of processes can run one; claims keep an item with one worker at a time, and a worker that dies
 * leaves a claim that expires, so the item runs again.
 * <p>
 * Intake hands freshly stored items over at once ({@link #runNow}); the background workers are
 * what guarantees the work happens: whatever the fast path did not finish, they find.
 */
public final class WorkDispatcher {
    private static final Logger LOG = LoggerFactory.getLogger(WorkDispatcher.class);

    public static final String IDEMPOTENCY_KEY = "IdempotencyKey";
    public static final String WORK_ITEM_ID = "WorkItemId";
    public static final String WORK_KIND = "WorkKind";
    public static final String WORK_ATTEMPT = "WorkAttempt";
    /** One item per claim: an item held in a worker's local batch would wait behind a slow handler. */
    private static final int CLAIM_BATCH = 1;
    private static final Duration DEPTH_REFRESH = Duration.ofSeconds(5);

    public record Options(int concurrency, int maxAttempts, Duration backoffBase, Duration backoffCap, Duration claim,
                          Duration pollInterval, Set<String> orderedKinds) {
        public static Options from(Settings settings) {
            return new Options(
                    settings.getInt("work.concurrency", 4),
                    settings.getInt("work.max-attempts", 8),
                    Duration.ofMillis(settings.getLong("work.backoff-base-millis", 1000)),
                    Duration.ofMillis(settings.getLong("work.backoff-cap-millis", 300_000)),
                    Duration.ofSeconds(settings.getLong("work.claim-seconds", 120)),
                    Duration.ofMillis(settings.getLong("work.poll-interval-millis", 500)),
                    Arrays.stream(settings.get("work.ordered-kinds", "telegram-update,album-child").split(","))
                            .map(String::trim).filter(s -> !s.isEmpty()).collect(Collectors.toSet()));
        }
    }

    private final CamelContext camel;
    private final WorkQueue queue;
    private final Map<String, WorkSource> sources;
    private final Options options;
    private final Backoff backoff;
    private final EffectGuard effects;
    private final String worker = ProcessIdentity.name();
    private MeterRegistry registry;
    private final Map<String, AtomicLong> depth = new ConcurrentHashMap<>();
    private final Object idle = new Object();
    private final List<Thread> threads = new ArrayList<>();
    private volatile boolean running;
    private ProducerTemplate producer;
    private Instant lastDepthRefresh = Instant.EPOCH;

    public WorkDispatcher(CamelContext camel, WorkQueue queue, List<WorkSource> sources, Options options) {
        this.camel = camel;
        this.queue = queue;
        this.sources = sources.stream().collect(Collectors.toMap(WorkSource::kind, s -> s));
        this.options = options;
        this.backoff = new Backoff(options.backoffBase(), options.backoffCap());
        this.effects = new EffectGuard(queue.dataSource());
    }

    public synchronized void start() {
        if (running) {
            return;
        }
        if (handledKinds().isEmpty()) {
            LOG.info("work: no work kind has a handler in this process; no dispatcher threads");
            return;
        }
        // Looked up at start: camel-micrometer binds its registry while the context starts.
        registry = MeterRegistryLookup.of(camel);
        running = true;
        producer = camel.createProducerTemplate();
        for (int i = 0; i < options.concurrency(); i++) {
            Thread thread = new Thread(this::workLoop, "work-dispatcher-" + i);
            thread.setDaemon(true);
            threads.add(thread);
            thread.start();
        }
        LOG.info("work: {} dispatcher thread(s) for {}; at most {} attempts, then parked; claims last {} s",
                options.concurrency(), handledKinds(), options.maxAttempts(), options.claim().toSeconds());
    }

    /** Lets running handlers finish; their outcomes are recorded before this returns. */
    public synchronized void stop() {
        running = false;
        synchronized (idle) {
            idle.notifyAll();
        }
        for (Thread thread : threads) {
            try {
                thread.join(TimeUnit.SECONDS.toMillis(30));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        threads.clear();
    }

    /** The dispatcher the runner bound in this context, or null (a component used on its own). */
    public static WorkDispatcher of(CamelContext context) {
        return context.getRegistry().findSingleByType(WorkDispatcher.class);
    }

    /** Wakes this context's dispatcher, if it has one: new items were committed. */
    public static void nudge(CamelContext context) {
        WorkDispatcher dispatcher = of(context);
        if (dispatcher != null) {
            dispatcher.nudge();
        }
    }

    /** Wakes the workers: new items were stored. */
    public void nudge() {
        synchronized (idle) {
            idle.notifyAll();
        }
    }

    /**
     * The fast path: claims these just-stored items (unless an earlier item of their chat is
     * unfinished) and runs each through {@code process} on the caller's thread. Items not claimed
     * here are left for the workers.
     */
    public void runNow(List<Long> itemIds, Function<WorkItem, Exchange> newExchange, ExchangeProcessor process) {
        try {
            for (WorkItem item : queue.claimIds(itemIds, worker, options.claim(), options.orderedKinds(), handledKinds())) {
                Exchange exchange = newExchange.apply(item);
                setWorkHeaders(exchange.getMessage(), item);
                execute(item, exchange, process);
            }
        } catch (SQLException e) {
            LOG.warn("work: could not claim freshly stored items ({}); the dispatcher runs them", e.getMessage());
        }
        nudge();
    }

    @FunctionalInterface
    public interface ExchangeProcessor {
        void process(Exchange exchange) throws Exception;
    }

    private void workLoop() {
        while (running) {
            List<WorkItem> claimed;
            try {
                refreshDepth();
                claimed = queue.claim(CLAIM_BATCH, worker, options.claim(), options.orderedKinds(), handledKinds());
            } catch (SQLException e) {
                LOG.warn("work: cannot claim work ({}); retrying", e.getMessage());
                claimed = List.of();
            }
            for (WorkItem item : claimed) {
                WorkSource source = source(item.kind());
                Exchange exchange = new DefaultExchange(camel);
                setWorkHeaders(exchange.getMessage(), item);
                try (Connection c = queue.dataSource().getConnection()) {
                    source.load(c, item, exchange.getMessage());
                } catch (SQLException e) {
                    exchange.setException(e);
                    record(item, exchange, 0);
                    continue;
                }
                execute(item, exchange, ex -> producer.send(source.endpointUri(), ex));
            }
            if (claimed.isEmpty()) {
                synchronized (idle) {
                    if (running) {
                        try {
                            idle.wait(options.pollInterval().toMillis());
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                            return;
                        }
                    }
                }
            }
        }
    }

    /** The kinds given at construction and those route files registered since (webhook-inbox channels). */
    private Set<String> handledKinds() {
        Set<String> kinds = new TreeSet<>(sources.keySet());
        camel.getRegistry().findByType(WorkSource.class).forEach(source -> kinds.add(source.kind()));
        return kinds;
    }

    /**
     * The kinds given at construction, else one bound in the Camel registry: a channel configured
     * in a route file (webhook-inbox) registers its kind there when its route starts.
     */
    private WorkSource source(String kind) {
        WorkSource source = sources.get(kind);
        return source != null ? source : camel.getRegistry().findByType(WorkSource.class).stream()
                .filter(s -> s.kind().equals(kind)).findFirst().orElse(null);
    }

    private void execute(WorkItem item, Exchange exchange, ExchangeProcessor process) {
        long start = System.nanoTime();
        try {
            process.process(exchange);
        } catch (Exception e) {
            exchange.setException(e);
        }
        record(item, exchange, System.nanoTime() - start);
    }

    private void record(WorkItem item, Exchange exchange, long nanos) {
        Exception error = exchange.getException();
        String outcome;
        try {
            // A guarded effect's failure says what happened; the ledger records it first.
            EffectFailure effect = error == null ? null : exchange.getException(EffectFailure.class);
            if (effect != null) {
                effects.settle(exchange, effect);
            }
            EffectOutcome effectOutcome = effect == null ? null : effect.outcome();
            if (error == null) {
                outcome = queue.done(item, worker) ? "done" : "claim-lost";
            } else if (effectOutcome == EffectOutcome.UNDELIVERABLE) {
                outcome = queue.undeliverable(item, worker, describe(error)) ? "undeliverable" : "claim-lost";
                LOG.info("work: item {} ({} {}) undeliverable, not retried: {}", item.id(), item.kind(), item.sourceKey(), describe(error));
            } else if (effectOutcome == EffectOutcome.AMBIGUOUS
                    || exchange.getException(EffectGuard.UnconfirmedEffectException.class) != null) {
                outcome = queue.parked(item, worker, describe(error)) ? "parked" : "claim-lost";
                LOG.warn("work: item {} ({} {}) parked for reconciliation: {}", item.id(), item.kind(), item.sourceKey(), describe(error));
            } else if (item.attempts() >= options.maxAttempts()) {
                outcome = queue.parked(item, worker, describe(error)) ? "parked" : "claim-lost";
                LOG.warn("work: item {} ({} {}) parked after {} attempts: {}", item.id(), item.kind(), item.sourceKey(), item.attempts(), describe(error));
            } else {
                Instant next = Instant.now().plus(backoff.delayAfter(item.attempts()));
                if (effect != null && effect.notBefore() != null && effect.notBefore().isAfter(next)) {
                    next = effect.notBefore(); // e.g. a 429's retry_after
                }
                outcome = queue.failed(item, worker, describe(error), next) ? "failed" : "claim-lost";
                LOG.info("work: item {} ({} {}) failed attempt {} of {}, next at {}: {}", item.id(), item.kind(),
                        item.sourceKey(), item.attempts(), options.maxAttempts(), next, describe(error));
            }
        } catch (SQLException e) {
            // The claim expires and the item runs again: handlers are guarded for that.
            LOG.warn("work: outcome of item {} not recorded ({}); it runs again after its claim expires", item.id(), e.getMessage());
            outcome = "unrecorded";
        }
        if ("claim-lost".equals(outcome)) {
            LOG.warn("work: item {} ran longer than its claim ({} s) and was taken by another worker; outcome not recorded",
                    item.id(), options.claim().toSeconds());
        }
        Timer.builder("chat_intake_work_handler_seconds").tag("kind", item.kind()).tag("outcome", outcome)
                .register(registry).record(nanos, TimeUnit.NANOSECONDS);
        Counter.builder("chat_intake_work_attempts").tag("kind", item.kind()).register(registry).increment();
    }

    private static void setWorkHeaders(Message message, WorkItem item) {
        message.setHeader(IDEMPOTENCY_KEY, item.sourceKey());
        message.setHeader(WORK_ITEM_ID, item.id());
        message.setHeader(WORK_KIND, item.kind());
        message.setHeader(WORK_ATTEMPT, item.attempts());
    }

    private static String describe(Throwable error) {
        Throwable cause = error;
        while (cause.getCause() != null && cause.getCause() != cause && cause.getMessage() == null) {
            cause = cause.getCause();
        }
        String text = cause.getClass().getSimpleName() + (cause.getMessage() == null ? "" : ": " + cause.getMessage());
        // Stored as last_error and shown by work status: any component's message may quote a secret.
        return Redactor.redact(text, 1000);
    }

    /**
     * Depth by kind and state of unfinished work (pending, running, failed, parked), for the
     * metrics; read at most every few seconds, not per scrape, through the partial index on
     * unfinished items, so the cost follows the backlog, not the history. Done work is counted by
     * {@code chat_intake_work_handler_seconds_count{outcome="done"}} instead.
     */
    static final String DEPTH = "SELECT kind, state, count(*) FROM work_item WHERE state <> 'done' GROUP BY kind, state";

    private void refreshDepth() {
        synchronized (depth) {
            if (Duration.between(lastDepthRefresh, Instant.now()).compareTo(DEPTH_REFRESH) < 0) {
                return;
            }
            lastDepthRefresh = Instant.now();
        }
        try (Connection c = queue.dataSource().getConnection(); PreparedStatement ps = c.prepareStatement(DEPTH);
             ResultSet rs = ps.executeQuery()) {
            depth.values().forEach(v -> v.set(0));
            while (rs.next()) {
                String kind = rs.getString(1);
                String state = rs.getString(2);
                depth.computeIfAbsent(kind + "|" + state, k -> {
                    AtomicLong value = new AtomicLong();
                    Gauge.builder("chat_intake_work_items", value, AtomicLong::get).tag("kind", kind).tag("state", state).register(registry);
                    return value;
                }).set(rs.getLong(3));
            }
        } catch (SQLException e) {
            LOG.debug("work: depth not refreshed: {}", e.getMessage());
        }
    }
}
