package io.chatintake.work;

import io.chatintake.support.FormerHeaderNames;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.apache.camel.support.DefaultExchange;

/**
 * Runs a worker's slice: its runs one after the other, each in its order, through the kinds'
 * handler routes, and has their outcomes recorded together: at the end, or every
 * {@link #FLUSH_EVERY} of a long slice. For an ordered kind a failed item ends its run and holds
 * its chat until its retry; a deferral holds its chat, ordered or not. A run handed back
 * meanwhile (its slice stalled on a slow handler) is skipped: another worker has it.
 */
final class ExecutePicked {
    static final String IDEMPOTENCY_KEY = WorkConstants.IDEMPOTENCY_KEY;
    static final String WORK_ITEM_ID = WorkConstants.WORK_ITEM_ID;
    static final String WORK_KIND = WorkConstants.WORK_KIND;
    static final String WORK_ATTEMPT = WorkConstants.WORK_ATTEMPT;
    /** A long run records what it has done at least this often, so a crash repeats little. */
    static final Duration FLUSH_EVERY = Duration.ofMillis(250);

    private final CamelContext camel;
    private final DataSource dataSource;
    private final HandlerSources sources;
    private final RunResults outcomes;
    private final WorkMetrics metrics;
    private final ClaimedRuns runs;
    private final RecordRunResults recorder;
    private final AtomicBoolean running;
    private final HandlerCall handlers;

    ExecutePicked(CamelContext camel, DataSource dataSource, HandlerSources sources, RunResults outcomes, WorkMetrics metrics,
                  ClaimedRuns runs, RecordRunResults recorder, AtomicBoolean running, Duration handlerLimit) {
        this.camel = camel;
        this.dataSource = dataSource;
        this.sources = sources;
        this.outcomes = outcomes;
        this.metrics = metrics;
        this.runs = runs;
        this.recorder = recorder;
        this.running = running;
        this.handlers = new HandlerCall(camel, handlerLimit);
    }

    void execute(Slice slice) {
        runs.sliceStarted(slice);
        // Only what this worker started: a run handed back from this slice may be another worker's now.
        List<ActiveRun> started = new ArrayList<>();
        try {
            SliceItems items = new SliceItems(slice.runs.stream().map(r -> r.run).toList());
            List<FinishedRun> unrecorded = new ArrayList<>();
            // Effects performed (or refused) whose record the database could not take: written first.
            List<EffectGuard.Settlement> settlements = new ArrayList<>();
            long recordedAt = System.nanoTime();
            for (ActiveRun run : slice.runs) {
                if (!run.move(ActiveRun.State.SLICED, ActiveRun.State.STARTED)) {
                    continue;
                }
                started.add(run);
                List<WorkItem> runItems = run.run.items();
                List<RunResult> done = new ArrayList<>();
                int next = 0;
                // Not once its claims can have been released (the database out of reach): its items may be another's.
                while (next < runItems.size() && running.get() && !run.lost.get() && runs.mayStart()) {
                    WorkItem item = runItems.get(next);
                    Exchange loaded = items.exchange(run.run, next);
                    slice.handlerStarted();
                    long start = System.nanoTime();
                    TraceContext.Attempt attempt = TraceContext.start(item, loaded);
                    Exchange exchange = runItem(item, loaded);
                    RunResult outcome = exchange == null ? RunResult.deferred(item, Instant.now()) : outcomes.of(item, exchange);
                    attempt.end(outcome);
                    metrics.handled(item, outcome, System.nanoTime() - start);
                    if (exchange != null) {
                        settlements.addAll(EffectGuard.unrecorded(exchange));
                    }
                    slice.handlerEnded();
                    next++;
                    done.add(outcome);
                    // A deferral holds the whole chat (its limit), ordered or not.
                    if (outcome.isDeferred() || run.run.ordered() && outcome.holdsItsChat()) {
                        break;
                    }
                    if (next < runItems.size() && System.nanoTime() - recordedAt >= FLUSH_EVERY.toNanos()) {
                        unrecorded.add(new FinishedRun(run.run, List.copyOf(done), null));
                        done.clear();
                        recorder.record(unrecorded, settlements);
                        unrecorded.clear();
                        settlements.clear();
                        recordedAt = System.nanoTime();
                    }
                }
                if (!run.lost.get()) {
                    unrecorded.add(new FinishedRun(run.run, done, runItems.subList(next, runItems.size())));
                }
                if (System.nanoTime() - recordedAt >= FLUSH_EVERY.toNanos()) {
                    recorder.record(unrecorded, settlements);
                    unrecorded.clear();
                    settlements.clear();
                    recordedAt = System.nanoTime();
                }
            }
            recorder.record(unrecorded, settlements);
        } finally {
            runs.sliceEnded(slice);
            started.forEach(runs::forget);
            // After a failure that ended the slice early, the runs it never started go back at once;
            // otherwise the heartbeat would extend their claims for as long as this process runs. The
            // run that failed waits for its claim to expire, its attempt counted, as after a crash.
            recorder.giveBack(slice.runs.stream().filter(r -> r.move(ActiveRun.State.SLICED, ActiveRun.State.STARTED)).toList());
        }
    }

    /** @return the exchange the item's outcome is read from */
    private Exchange runItem(WorkItem item, Exchange exchange) {
        if (exchange.getException() != null) {
            return exchange;
        }
        KindHandler consumer = sources.consumer(item.kind());
        // Its route stopped after the claim: the item waits as it was, its attempt not spent.
        return consumer == null ? null : handlers.send(consumer, exchange);
    }

    /**
     * The exchanges of a slice's items, filled from their rows a few at a time (the items of
     * several runs together where the kind reads rows together), so a slice's items are never all
     * in memory at once.
     */
    private final class SliceItems {
        private final List<WorkItem> all;
        private final Map<Long, Integer> runStarts = new HashMap<>();
        private final Exchange[] loaded;

        SliceItems(List<WorkRun> runs) {
            List<WorkItem> items = new ArrayList<>();
            for (WorkRun run : runs) {
                runStarts.put(run.token(), items.size());
                items.addAll(run.items());
            }
            this.all = items;
            this.loaded = new Exchange[items.size()];
        }

        Exchange exchange(WorkRun run, int index) {
            int at = runStarts.get(run.token()) + index;
            if (loaded[at] == null) {
                String kind = all.get(at).kind();
                int end = at;
                int limit = Math.min(all.size(), at + sources.loadTogether(kind));
                while (end < limit && all.get(end).kind().equals(kind)) {
                    end++;
                }
                List<Exchange> exchanges = load(kind, all.subList(at, end));
                for (int i = 0; i < exchanges.size(); i++) {
                    loaded[at + i] = exchanges.get(i);
                }
            }
            Exchange exchange = loaded[at];
            loaded[at] = null;
            return exchange;
        }
    }

    /** One exchange per item, filled from the items' rows (read together where the kind can). */
    private List<Exchange> load(String kind, List<WorkItem> items) {
        List<Exchange> exchanges = new ArrayList<>(items.size());
        for (WorkItem item : items) {
            Exchange exchange = new DefaultExchange(camel);
            setWorkHeaders(exchange.getMessage(), item);
            exchanges.add(exchange);
        }
        WorkSource source = sources.source(kind);
        if (source == null) {
            exchanges.forEach(e -> e.setException(new IllegalStateException("nothing in this process reads the rows of work of kind " + kind)));
            return exchanges;
        }
        try (Connection c = dataSource.getConnection()) {
            source.loadRun(c, items, exchanges);
            TraceContext.load(c, items, exchanges);
        } catch (SQLException e) {
            exchanges.forEach(exchange -> exchange.setException(e));
        }
        return exchanges;
    }

    private static void setWorkHeaders(Message message, WorkItem item) {
        message.setHeader(IDEMPOTENCY_KEY, item.sourceKey());
        message.setHeader(WORK_ITEM_ID, item.id());
        message.setHeader(WORK_KIND, item.kind());
        message.setHeader(WORK_ATTEMPT, item.attempts());
        FormerHeaderNames.copy(message, WorkConstants.FORMER_NAMES);
    }
}
