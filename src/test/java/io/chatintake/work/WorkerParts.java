package io.chatintake.work;

import io.chatintake.store.OperatorPause;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.apache.camel.CamelContext;
import org.apache.camel.Message;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.impl.DefaultCamelContext;

/**
 * What one dispatcher worker is made of, wired as {@link WorkDispatcher} wires it, over a plain
 * Camel context with a test's handler routes: for tests of one part at a time. Items are read by a
 * source that puts their source key in the body.
 */
final class WorkerParts implements AutoCloseable {
    static final Duration CLAIM = Duration.ofSeconds(60);
    static final String ORDERED = "ordered-work";
    static final String UNORDERED = "unordered-work";
    static final String WORKER = "worker-parts-test";

    final DataSource dataSource;
    final CamelContext camel = new DefaultCamelContext();
    final AtomicBoolean running = new AtomicBoolean(true);
    final WorkerWakeups wakeups = new WorkerWakeups();
    final WorkQueue queue;
    final WorkMetrics metrics;
    final ClaimedRuns runs;
    final HandlerSources sources;
    final RecordRunResults recorder;
    final ExecutePicked executing;

    WorkerParts(DataSource dataSource, RoutesBuilder handlers, WorkSource... more) throws Exception {
        this.dataSource = dataSource;
        camel.addRoutes(handlers);
        camel.start();
        List<WorkSource> all = new ArrayList<>(List.of(keyInBody(ORDERED), keyInBody(UNORDERED)));
        all.addAll(List.of(more));
        queue = new WorkQueue(dataSource);
        metrics = new WorkMetrics(dataSource);
        metrics.start(new SimpleMeterRegistry(), () -> 1);
        runs = new ClaimedRuns(wakeups, metrics);
        sources = new HandlerSources(camel, all,
                kind -> new KindRules(kind.equals(ORDERED), 3, Duration.ofMillis(200), Duration.ofMillis(800)));
        EffectGuard effects = new EffectGuard(dataSource);
        recorder = new RecordRunResults(queue, WORKER, effects, runs, running, CLAIM);
        executing = new ExecutePicked(camel, dataSource, sources, new RunResults(sources::rules, effects, metrics), metrics, runs,
                recorder, running, CLAIM);
    }

    /** A worker of {@code workers} that looks for work every {@code pollInterval} unless woken. */
    RunUntilShutdown worker(int workers, Duration pollInterval) {
        IntakePacing pacing = new IntakePacing(workers, 1, Duration.ofMillis(100), Duration.ofSeconds(1), Duration.ofSeconds(5),
                Duration.ofSeconds(30), pollInterval, runs, wakeups, running);
        ClaimDueWork claiming = new ClaimDueWork(queue, WORKER, CLAIM, 100, sources, runs, pacing,
                new Gathering(Duration.ofMillis(20), Duration.ofMillis(20)), new OperatorPause.Watch(dataSource, OperatorPause.Subject.WORK_KIND));
        return new RunUntilShutdown(running, runs, pacing, claiming, executing, wakeups, metrics, workers, 100, pollInterval);
    }

    void schedule(String kind, String chat, int... ids) throws Exception {
        schedule(dataSource, kind, chat, ids);
    }

    /** Schedules items of one kind and chat, source ids as given, committed. */
    static void schedule(DataSource dataSource, String kind, String chat, int... ids) throws Exception {
        List<WorkQueue.NewWork> work = new ArrayList<>();
        for (int id : ids) {
            work.add(new WorkQueue.NewWork(kind, kind + ":" + id, id, chat));
        }
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            WorkQueue.schedule(c, work);
            c.commit();
        }
    }

    /** Claims the due lanes here, as a worker does, and takes them as one worker's slice. */
    List<ActiveRun> claimSlice() throws Exception {
        runs.add(queue.claimLanes(WORKER, CLAIM, 100, 32, Set.of(ORDERED), Set.of(ORDERED, UNORDERED)).runs());
        return runs.takeSlice(1, 100);
    }

    /** Reads nothing but the item's source key, which it puts in the body. */
    static WorkSource keyInBody(String kind) {
        return new WorkSource(kind) {
            @Override
            public void load(Connection connection, WorkItem item, Message message) {
                message.setBody(item.sourceKey());
            }
        };
    }

    /** As {@link #keyInBody}, but its first load throws what no source should. */
    static WorkSource breaksOnce(String kind, AtomicInteger loads) {
        return new WorkSource(kind) {
            @Override
            public void load(Connection connection, WorkItem item, Message message) {
                if (loads.getAndIncrement() == 0) {
                    throw new IllegalStateException("a source bug");
                }
                message.setBody(item.sourceKey());
            }
        };
    }

    @Override
    public void close() {
        running.set(false);
        wakeups.wakeAll();
        camel.stop();
    }
}
