package io.chatintake.work;

import io.chatintake.config.Settings;
import io.chatintake.store.OperatorPause;
import io.chatintake.support.MeterRegistryLookup;
import io.chatintake.support.ProcessIdentity;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import org.apache.camel.CamelContext;
import org.apache.camel.spi.ExecutorServiceManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the handler route of every stored work item and records the outcome in the same database:
 * done, or failed with exponential backoff and jitter, or parked after the last attempt. Any number
 * of processes can run one; claims keep an item with one worker at a time.
 * <p>
 * Its parts, each named after what it does: {@link RunUntilShutdown} (a worker's loop),
 * {@link ClaimDueWork} (claiming: one claim takes the runs of many chats, a run being a chat's
 * consecutive due items, or one item without a chat), {@link ClaimedRuns} (the runs this process
 * holds, shared out as slices), {@link ExecutePicked} (running a slice through the handler routes),
 * {@link RunResults} (what a handler's run of an item comes to, deferrals included),
 * {@link RecordRunResults} (recording them, kept across a database outage), {@link ClaimKeeper}
 * (heartbeat, extension, release of dead processes' claims), {@link IntakePacing} (fewer workers
 * while intake is behind) and {@link WorkMetrics}. The stored side is {@link WorkQueue}.
 * <p>
 * Intake {@link #nudge}s the dispatcher after storing work: a wake-up for idle workers, never a
 * wait for intake; the workers find the work in storage. Its threads come from Camel's
 * {@link ExecutorServiceManager}: named, listed by Camel, and shut down with the context at the latest.
 */
public final class WorkDispatcher {
    private static final Logger LOG = LoggerFactory.getLogger(WorkDispatcher.class);

    public static final String IDEMPOTENCY_KEY = ExecutePicked.IDEMPOTENCY_KEY;
    public static final String WORK_ITEM_ID = ExecutePicked.WORK_ITEM_ID;
    public static final String WORK_KIND = ExecutePicked.WORK_KIND;
    public static final String WORK_ATTEMPT = ExecutePicked.WORK_ATTEMPT;
    /** How long intake counts as behind after it last said so ({@link #intakeBehind}). */
    static final Duration INTAKE_BEHIND = IntakePacing.INTAKE_BEHIND;

    public record Options(int concurrency, int maxAttempts, Duration backoffBase, Duration backoffCap, Duration claim,
                          Duration pollInterval, Set<String> orderedKinds, Duration heartbeat, int deadAfterHeartbeats, int runSize,
                          Duration gather, Duration gatherMax, int concurrencyWhileIntakeBehind, Duration gatherWhileIntakeBehind,
                          Duration gatherWhileBacklogAtSource, Duration intakeFirst, Duration maxDeferral) {
        public static Options from(Settings settings) {
            return new Options(
                    settings.getInt("work.concurrency"),
                    settings.getInt("work.max-attempts"),
                    Duration.ofMillis(settings.getLong("work.backoff-base-millis")),
                    Duration.ofMillis(settings.getLong("work.backoff-cap-millis")),
                    Duration.ofSeconds(settings.getLong("work.claim-seconds")),
                    Duration.ofMillis(settings.getLong("work.poll-interval-millis")),
                    // Empty: no kind is ordered.
                    Arrays.stream(settings.get("work.ordered-kinds").orElse("").split(","))
                            .map(String::trim).filter(s -> !s.isEmpty()).collect(Collectors.toSet()),
                    Duration.ofSeconds(settings.getLong("work.heartbeat-seconds")),
                    settings.getInt("work.dead-after-heartbeats"),
                    settings.getInt("work.run-size"),
                    Duration.ofMillis(settings.getLong("work.gather-millis")),
                    Duration.ofMillis(settings.getLong("work.gather-max-millis")),
                    // At least one: handling that stopped while intake stays behind would never catch up.
                    Math.max(1, settings.getInt("work.concurrency-while-intake-behind")),
                    Duration.ofMillis(settings.getLong("work.gather-millis-while-intake-behind")),
                    Duration.ofMillis(settings.getLong("work.gather-millis-while-backlog-at-source")),
                    Duration.ofSeconds(settings.getLong("work.intake-first-seconds")),
                    Duration.ofSeconds(settings.getLong("work.max-deferral-seconds")));
        }

        /** How long a process may stay silent before its claims are released. */
        Duration silence() {
            return heartbeat.multipliedBy(deadAfterHeartbeats);
        }
    }

    private final CamelContext camel;
    private final WorkQueue queue;
    private final Options options;
    private final HandlerSources sources;
    private final AtomicBoolean running = new AtomicBoolean();
    private final WorkerWakeups wakeups = new WorkerWakeups();
    private final WorkMetrics metrics;
    private final ClaimedRuns runs;
    private final IntakePacing pacing;
    private final RecordRunResults recorder;
    private final ExecutePicked executing;
    private final ClaimKeeper keeper;
    private final RunUntilShutdown worker;
    private final Gathering gathering;
    private ExecutorService workers;
    private ExecutorService beater;
    /** Not synchronized for readers: intake tells it from request threads, which a stopping dispatcher must not hold up. */
    private volatile StagedWorkScheduler scheduler;

    public WorkDispatcher(CamelContext camel, WorkQueue queue, List<WorkSource> sources, Options options) {
        this.camel = camel;
        this.queue = queue;
        this.options = options;
        this.sources = new HandlerSources(camel, sources,
                kind -> new KindRules(options.orderedKinds().contains(kind), options.maxAttempts(), options.backoffBase(), options.backoffCap()));
        String process = ProcessIdentity.name();
        EffectGuard effects = new EffectGuard(queue.dataSource());
        this.metrics = new WorkMetrics(queue.dataSource());
        this.runs = new ClaimedRuns(wakeups, metrics);
        this.pacing = new IntakePacing(options.concurrency(), options.concurrencyWhileIntakeBehind(), options.gatherWhileIntakeBehind(),
                options.gatherWhileBacklogAtSource(), options.intakeFirst(), options.maxDeferral(), options.pollInterval(), runs, wakeups,
                running);
        this.recorder = new RecordRunResults(queue, process, effects, runs, running, options.claim());
        RunResults outcomes = new RunResults(this.sources::rules, effects, metrics);
        this.executing = new ExecutePicked(camel, queue.dataSource(), this.sources, outcomes, metrics, runs, recorder, running,
                options.claim());
        this.keeper = new ClaimKeeper(queue, new RunnerHeartbeat(queue.dataSource(), process, this::handlingHeldBackSince), process,
                runs, wakeups, options.claim(), options.heartbeat(), options.silence());
        this.gathering = new Gathering(options.gather(), options.gatherMax());
        ClaimDueWork claiming = new ClaimDueWork(queue, process, options.claim(), options.runSize(), this.sources,
                runs, pacing, gathering, new OperatorPause.Watch(queue.dataSource(), OperatorPause.Subject.WORK_KIND));
        this.worker = new RunUntilShutdown(running, runs, pacing, claiming, executing, wakeups, metrics, options.concurrency(),
                options.runSize(), options.pollInterval());
    }

    public synchronized void start() {
        if (running.get()) {
            return;
        }
        if (scheduler == null) {
            // Whether or not this process handles anything: what any intake staged or stored must become work for whoever does.
            // Looked up at start: the application binds each channel's derivation before the routes start.
            scheduler = new StagedWorkScheduler(camel, queue, List.copyOf(camel.getRegistry().findByType(Derivation.class)),
                    options.gather(), this::nudge);
        }
        // Started even while no work: route runs here: one started later (a file added) is run at once.
        Set<String> kinds = sources.kinds();
        // Looked up at start: camel-micrometer binds its registry while the context starts.
        metrics.start(MeterRegistryLookup.of(camel), pacing::workersAllowed);
        keeper.firstBeat();
        running.set(true);
        ExecutorServiceManager threads = camel.getExecutorServiceManager();
        beater = threads.newSingleThreadExecutor(this, "work-heartbeat");
        beater.execute(keeper);
        workers = threads.newFixedThreadPool(this, "work-dispatcher", options.concurrency());
        for (int i = 0; i < options.concurrency(); i++) {
            workers.execute(worker);
        }
        LOG.info("work: {} dispatcher thread(s), running the kinds whose work: route runs here ({} now); by default at most {} attempts, then parked; claims last {} s, extended while"
                        + " handlers run; heartbeat every {} s, claims of a process silent for {} s are released; runs of up to {} item(s),"
                        + " gathered for {} when they come in thin; {} while intake is behind, claiming at most every {} ms, every {} ms"
                        + " while its source holds a backlog; yielding for {} s at a stretch, then every other second, and not"
                        + " once work waited {} s",
                options.concurrency(), kinds, options.maxAttempts(), options.claim().toSeconds(),
                options.heartbeat().toSeconds(), options.silence().toSeconds(), options.runSize(), gathering,
                options.concurrencyWhileIntakeBehind() >= options.concurrency() ? "all of them"
                        : "at most " + options.concurrencyWhileIntakeBehind(), options.gatherWhileIntakeBehind().toMillis(),
                options.gatherWhileBacklogAtSource().toMillis(), options.intakeFirst().toSeconds(), options.maxDeferral().toSeconds());
    }

    /** Lets running handlers finish; their outcomes are recorded before this returns. */
    public synchronized void stop() {
        if (scheduler != null) {
            scheduler.stop();
            scheduler = null;
        }
        running.set(false);
        wakeups.wakeAll();
        if (workers != null) {
            awaitStopped(workers);
            workers = null;
        }
        // Runs claimed here that no worker started go back to the database as they were.
        recorder.giveBack(runs.takeQueued());
        metrics.stop();
        // Beating (and extending claims) until the last handler returned.
        keeper.stopBeating();
        if (beater != null) {
            awaitStopped(beater);
            beater = null;
            keeper.removeHeartbeat();
        }
    }

    /** Their loops end once the dispatcher stops running (or beating); a handler still running after 30 s is interrupted. */
    private void awaitStopped(ExecutorService executor) {
        camel.getExecutorServiceManager().shutdownGraceful(executor, TimeUnit.SECONDS.toMillis(30));
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

    /**
     * Work was staged ({@link WorkQueue#stageFrom}), or rows to derive stored ({@link Derivation}), and committed: its
     * scheduler turns them into items now, then wakes a worker.
     */
    public void staged() {
        StagedWorkScheduler now = scheduler;
        if (now != null) {
            now.staged();
        }
    }

    /**
     * Wakes an idle worker: new items were stored. Never waits for a worker. One claim takes the
     * runs of many chats, and a worker whose claim was full wakes the next one.
     */
    public void nudge() {
        wakeups.nudge();
    }

    /**
     * Intake is short of time (webhook deliveries queue for a transaction, a poll's answer for a thread): for
     * {@link #INTAKE_BEHIND} from now, fewer workers run ({@link IntakePacing}). A hint like
     * {@link #nudge}; it never waits.
     */
    public void intakeBehind() {
        pacing.intakeBehind();
    }

    /**
     * Intake's source holds more than intake just took (a Telegram poll came back full), and only
     * intake drains it: as {@link #intakeBehind}, with lane claims paced by
     * {@code work.gather-millis-while-backlog-at-source}. A hint; it never waits.
     */
    public void backlogAtSource() {
        pacing.backlogAtSource();
    }

    /** Since when this process holds its handlers back for intake, without a break; null while it does not. */
    public Instant handlingHeldBackSince() {
        return pacing.heldBackSince();
    }

    /** The kinds this process runs now, each with a started {@code work:} route. */
    public Set<String> kinds() {
        return sources.kinds();
    }
}
