package io.chatintake.work;

import io.chatintake.support.ProcessIdentity;
import io.chatintake.config.Settings;
import io.chatintake.support.MeterRegistryLookup;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.TreeSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import java.util.stream.Collectors;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.spi.ExecutorServiceManager;
import org.apache.camel.support.DefaultExchange;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the handler route of every stored work item and records the outcome in the same database:
 * done, or failed with exponential backoff and jitter, or parked after the last attempt. Any number
 * of processes can run one; claims keep an item with one worker at a time.
 * <p>
 * One claim takes the runs of many chats at once (a run: consecutive due items of one chat, its
 * lane), or one item without a chat, and queues them in this process; each idle worker takes its
 * share (a slice), runs it and records the outcomes in one commit (or one per
 * {@link #FLUSH_EVERY} of a long slice). A handler that runs longer than {@link #STALL} hands the
 * runs still waiting in its slice to other workers, so a slow chat holds up only itself. For an
 * ordered kind a failed item ends its run and holds its chat until its retry.
 * <p>
 * Every process beats in {@code runner_heartbeat}; claims of a process that stopped beating for
 * {@code work.dead-after-heartbeats} intervals are released by any live one, and claims of runs
 * still running here are extended every third of the claim time, so a slow handler keeps its
 * claim and a killed process's chats move on within seconds. Each claim has a token: a worker
 * whose claim was taken away drops its outcomes (logged once per claim).
 * <p>
 * Intake {@link #nudge}s the dispatcher after storing work: a wake-up for idle workers, never a
 * wait for intake; the workers find the work in storage.
 */
public final class WorkDispatcher {
    private static final Logger LOG = LoggerFactory.getLogger(WorkDispatcher.class);

    public static final String IDEMPOTENCY_KEY = "IdempotencyKey";
    public static final String WORK_ITEM_ID = "WorkItemId";
    public static final String WORK_KIND = "WorkKind";
    public static final String WORK_ATTEMPT = "WorkAttempt";
    /** A long run records what it has done at least this often, so a crash repeats little. */
    static final Duration FLUSH_EVERY = Duration.ofMillis(250);
    /** Failed attempts at recording outcomes after which a warning says they are still being tried. */
    private static final int RECORD_ATTEMPTS = 4;
    private static final Duration RECORD_PAUSE_CAP = Duration.ofSeconds(2);
    /** Lanes one claim takes at most: a burst over many chats costs a few claims and commits, not one per chat. */
    static final int LANES_PER_CLAIM = 32;
    /** A handler running this long hands the runs queued behind it in its slice to other workers. */
    static final Duration STALL = Duration.ofMillis(500);
    /** How long intake counts as behind after it last said so: the workers it held back start soon after it caught up. */
    static final Duration INTAKE_BEHIND = Duration.ofMillis(500);

    public record Options(int concurrency, int maxAttempts, Duration backoffBase, Duration backoffCap, Duration claim,
                          Duration pollInterval, Set<String> orderedKinds, Duration heartbeat, int deadAfterHeartbeats, int runSize,
                          Duration gather, Duration gatherMax, int concurrencyWhileIntakeBehind, Duration gatherWhileIntakeBehind) {
        /**
         * With the default heartbeat (2 s, dead after 4 missed), runs of up to 500 items, a gathering
         * wait of 20 ms and every worker at work, as often as ever, while intake is behind.
         */
        public Options(int concurrency, int maxAttempts, Duration backoffBase, Duration backoffCap, Duration claim,
                       Duration pollInterval, Set<String> orderedKinds) {
            this(concurrency, maxAttempts, backoffBase, backoffCap, claim, pollInterval, orderedKinds, Duration.ofSeconds(2), 4, 500,
                    Duration.ofMillis(20), Duration.ofMillis(20), concurrency, Duration.ZERO);
        }

        public static Options from(Settings settings) {
            return new Options(
                    settings.getInt("work.concurrency", 4),
                    settings.getInt("work.max-attempts", 8),
                    Duration.ofMillis(settings.getLong("work.backoff-base-millis", 1000)),
                    Duration.ofMillis(settings.getLong("work.backoff-cap-millis", 300_000)),
                    Duration.ofSeconds(settings.getLong("work.claim-seconds", 120)),
                    Duration.ofMillis(settings.getLong("work.poll-interval-millis", 500)),
                    Arrays.stream(settings.get("work.ordered-kinds", "telegram-update,album-child").split(","))
                            .map(String::trim).filter(s -> !s.isEmpty()).collect(Collectors.toSet()),
                    Duration.ofSeconds(settings.getLong("work.heartbeat-seconds", 2)),
                    settings.getInt("work.dead-after-heartbeats", 4),
                    settings.getInt("work.run-size", 500),
                    Duration.ofMillis(settings.getLong("work.gather-millis", 20)),
                    Duration.ofMillis(settings.getLong("work.gather-max-millis", 20)),
                    // At least one: handling that stopped while intake stays behind would never catch up.
                    Math.max(1, settings.getInt("work.concurrency-while-intake-behind", 1)),
                    Duration.ofMillis(settings.getLong("work.gather-millis-while-intake-behind", 100)));
        }

        /** How long a process may stay silent before its claims are released. */
        Duration silence() {
            return heartbeat.multipliedBy(deadAfterHeartbeats);
        }
    }

    /**
     * A run claimed by this process: queued here, in a worker's slice, or started (then it stays
     * with that worker). {@code lost} once its claim was released or taken over.
     */
    private static final class ActiveRun {
        static final int QUEUED = 0;
        static final int SLICED = 1;
        static final int STARTED = 2;

        final WorkRun run;
        final AtomicBoolean lost = new AtomicBoolean();
        final AtomicInteger state = new AtomicInteger(QUEUED);

        ActiveRun(WorkRun run) {
            this.run = run;
        }
    }

    /** The runs a worker took to handle one after the other, and since when its current handler runs (0: none). */
    private static final class Slice {
        final List<ActiveRun> runs;
        volatile long handlerSince;

        Slice(List<ActiveRun> runs) {
            this.runs = runs;
        }

        /** Its handler has run longer than {@link #STALL} at {@code now} (System.nanoTime()). */
        boolean stalled(long now) {
            long since = handlerSince;
            return since != 0 && now - since >= STALL.toNanos();
        }
    }

    private final CamelContext camel;
    private final WorkQueue queue;
    private final Map<String, WorkSource> sources;
    private final Options options;
    private final String worker = ProcessIdentity.name();
    private final RunnerHeartbeat heartbeat;
    private final Map<Long, ActiveRun> active = new ConcurrentHashMap<>();
    /** Runs claimed by this process that no worker has taken yet. */
    private final Deque<ActiveRun> claimed = new ConcurrentLinkedDeque<>();
    private final Set<Slice> slices = ConcurrentHashMap.newKeySet();
    private final Object idle = new Object();
    /** Workers claiming or handling right now (not those waiting for work or for intake). */
    private final AtomicInteger working = new AtomicInteger();
    /** System.nanoTime() until which intake is behind its source. */
    private volatile long intakeBehindUntil = System.nanoTime();
    private final ReentrantLock laneClaim = new ReentrantLock();
    /** System.nanoTime() before which the next lane claim gathers; guarded by laneClaim, as is gathering. */
    private long gatheredUntil = System.nanoTime();
    /** System.nanoTime() of the last lane claim, which paces claims while intake is behind; guarded by laneClaim. */
    private long laneClaimedAt = System.nanoTime();
    private final Gathering gathering;
    private final Object beatPause = new Object();
    /** From Camel's ExecutorServiceManager: named, listed by Camel, and shut down with the context at the latest. */
    private ExecutorService workers;
    private ExecutorService beater;
    private volatile boolean running;
    private volatile boolean beating;
    private boolean nudged;
    private ProducerTemplate producer;
    /** Not synchronized for readers: intake tells it from request threads, which a stopping dispatcher must not hold up. */
    private volatile StagedWorkScheduler scheduler;
    private final EffectGuard effects;
    private final ItemOutcomes outcomes;
    private final WorkMetrics metrics;

    public WorkDispatcher(CamelContext camel, WorkQueue queue, List<WorkSource> sources, Options options) {
        this.camel = camel;
        this.queue = queue;
        this.sources = sources.stream().collect(Collectors.toMap(WorkSource::kind, s -> s));
        this.options = options;
        this.gathering = new Gathering(options.gather(), options.gatherMax());
        this.heartbeat = new RunnerHeartbeat(queue.dataSource(), worker);
        this.effects = new EffectGuard(queue.dataSource());
        this.metrics = new WorkMetrics(queue.dataSource());
        this.outcomes = new ItemOutcomes(options.maxAttempts(), new Backoff(options.backoffBase(), options.backoffCap()), effects, metrics);
    }

    public synchronized void start() {
        if (running) {
            return;
        }
        if (scheduler == null) {
            // Whether or not this process handles anything: what its intake staged must become work for whoever does.
            scheduler = new StagedWorkScheduler(queue, options.gather(), this::nudge);
        }
        if (handledKinds().isEmpty()) {
            LOG.info("work: no work kind has a handler in this process; no dispatcher threads");
            return;
        }
        // Looked up at start: camel-micrometer binds its registry while the context starts.
        metrics.start(MeterRegistryLookup.of(camel), this::workersAllowed);
        try {
            // Before the first claim, so no claim of this process is ever without its heartbeat.
            heartbeat.beat();
        } catch (SQLException e) {
            LOG.warn("work: first heartbeat not recorded ({}); retried every {} s", e.getMessage(), options.heartbeat().toSeconds());
        }
        running = true;
        beating = true;
        producer = camel.createProducerTemplate();
        ExecutorServiceManager threads = camel.getExecutorServiceManager();
        beater = threads.newSingleThreadExecutor(this, "work-heartbeat");
        beater.execute(this::heartbeatLoop);
        workers = threads.newFixedThreadPool(this, "work-dispatcher", options.concurrency());
        for (int i = 0; i < options.concurrency(); i++) {
            workers.execute(this::workLoop);
        }
        LOG.info("work: {} dispatcher thread(s) for {}; at most {} attempts, then parked; claims last {} s, extended while"
                        + " handlers run; heartbeat every {} s, claims of a process silent for {} s are released; runs of up to {} item(s),"
                        + " gathered for {} when they come in thin; {} while intake is behind its source, claiming at most every {} ms",
                options.concurrency(), handledKinds(), options.maxAttempts(), options.claim().toSeconds(),
                options.heartbeat().toSeconds(), options.silence().toSeconds(), options.runSize(), gathering,
                options.concurrencyWhileIntakeBehind() >= options.concurrency() ? "all of them"
                        : "at most " + options.concurrencyWhileIntakeBehind(), options.gatherWhileIntakeBehind().toMillis());
    }

    /** Lets running handlers finish; their outcomes are recorded before this returns. */
    public synchronized void stop() {
        if (scheduler != null) {
            scheduler.stop();
            scheduler = null;
        }
        running = false;
        wakeAll();
        if (workers != null) {
            awaitStopped(workers);
            workers = null;
        }
        giveBackQueued();
        metrics.stop();
        // Beating (and extending claims) until the last handler returned.
        beating = false;
        synchronized (beatPause) {
            beatPause.notifyAll();
        }
        if (beater != null) {
            awaitStopped(beater);
            beater = null;
            try {
                heartbeat.remove();
            } catch (SQLException e) {
                LOG.debug("work: heartbeat row not removed ({}); it ages out", e.getMessage());
            }
        }
    }

    /** Runs claimed here that no worker started go back to the database as they were. */
    private void giveBackQueued() {
        List<ActiveRun> queued = new ArrayList<>();
        for (ActiveRun run = claimed.poll(); run != null; run = claimed.poll()) {
            queued.add(run);
        }
        giveBack(queued);
    }

    /** These runs go back to the database as they were before their claim, in one commit, and are no longer this process's. */
    private void giveBack(List<ActiveRun> runs) {
        record(runs.stream().map(run -> new WorkQueue.Finished(run.run, List.of(), run.run.items())).toList(), List.of());
        runs.forEach(run -> active.remove(run.run.token()));
    }

    /** Their loops end once {@code running} (or {@code beating}) is cleared; a handler still running after 30 s is interrupted. */
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

    /** Work was staged ({@link WorkQueue#stageFrom}) and committed: its scheduler turns it into items now, then wakes a worker. */
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
        synchronized (idle) {
            nudged = true;
            idle.notify();
        }
    }

    /**
     * Intake's source holds more than intake just took (a Telegram poll came back full): for
     * {@link #INTAKE_BEHIND} from now, fewer workers run ({@link #waitedForIntake}). A hint like
     * {@link #nudge}; it never waits.
     */
    public void intakeBehind() {
        intakeBehindUntil = System.nanoTime() + INTAKE_BEHIND.toNanos();
    }

    /** Wakes every idle worker: runs are queued here for them, or the dispatcher stops. */
    private void wakeAll() {
        synchronized (idle) {
            nudged = true;
            idle.notifyAll();
        }
    }

    /** A worker while the dispatcher runs: an unexpected failure is logged and the worker goes on. */
    private void workLoop() {
        while (running) {
            try {
                work();
            } catch (RuntimeException e) {
                LOG.error("work: a dispatcher worker failed; it goes on", e);
            }
        }
    }

    private void work() {
        boolean lanesFirst = Thread.currentThread().getName().hashCode() % 2 == 0;
        while (running) {
            synchronized (idle) {
                nudged = false;
            }
            if (waitedForIntake()) {
                continue;
            }
            boolean found = false;
            try {
                List<ActiveRun> slice = takeSlice();
                if (!slice.isEmpty()) {
                    handle(new Slice(slice));
                    continue;
                }
                metrics.refreshDepth();
                // Alternating, so that neither chats nor items without a chat can starve the other.
                found = lanesFirst ? claimLanes() : claimUnlaned();
                if (!found) {
                    found = lanesFirst ? claimUnlaned() : claimLanes();
                }
                lanesFirst = !lanesFirst;
            } catch (SQLException e) {
                LOG.warn("work: cannot claim work ({}); retrying", e.getMessage());
            } finally {
                working.decrementAndGet();
            }
            if (found) {
                continue;
            }
            synchronized (idle) {
                // A nudge that came while this worker was looking is not lost: it looks again at once.
                if (running && !nudged && claimed.isEmpty()) {
                    try {
                        idle.wait(options.pollInterval().toMillis());
                    } catch (InterruptedException e) {
                        // Nothing here interrupts workers to stop them (stop() clears running): a stray
                        // interrupt, e.g. left by a handler, must not end this worker.
                    }
                }
            }
        }
    }

    /**
     * While intake is behind its source ({@link #intakeBehind}), at most
     * {@code work.concurrency-while-intake-behind} workers claim or handle: storing and confirming
     * get the cores first, and the work they store waits in the database, where it is safe, until
     * intake has caught up. A handler stalled on a slow call ({@link #STALL}) uses no core and
     * does not count.
     * @return true when this worker waited instead of working (it looks again); false when it
     *         may work, counted in {@link #working} until it is done
     */
    private boolean waitedForIntake() {
        while (true) {
            int now = working.get();
            int allowed = workersAllowed();
            if (allowed >= options.concurrency() || now - stalledHandlers() < allowed) {
                if (working.compareAndSet(now, now + 1)) {
                    return false;
                }
                continue;
            }
            long behind = intakeBehindUntil - System.nanoTime();
            synchronized (idle) {
                if (running) {
                    try {
                        idle.wait(Math.max(1, Math.min(TimeUnit.NANOSECONDS.toMillis(behind), options.pollInterval().toMillis())));
                    } catch (InterruptedException e) {
                        // as in the idle wait: a stray interrupt does not end the worker
                    }
                }
            }
            return true;
        }
    }

    private int workersAllowed() {
        return intakeBehindUntil - System.nanoTime() > 0
                ? Math.min(options.concurrency(), options.concurrencyWhileIntakeBehind()) : options.concurrency();
    }

    private int stalledHandlers() {
        long now = System.nanoTime();
        return (int) slices.stream().filter(slice -> slice.stalled(now)).count();
    }

    /**
     * Waits as long as {@link Gathering} said after the previous lane claim, and while intake is
     * behind its source until {@code work.gather-millis-while-intake-behind} after it: the worker
     * left then takes longer runs less often, so handling costs the cores intake needs less.
     */
    private void gather() {
        long until = gatheredUntil;
        long paced = laneClaimedAt + options.gatherWhileIntakeBehind().toNanos();
        if (intakeBehindUntil - System.nanoTime() > 0 && paced - until > 0) {
            until = paced;
        }
        long wait = until - System.nanoTime();
        if (wait > 0) {
            try {
                TimeUnit.NANOSECONDS.sleep(wait);
            } catch (InterruptedException e) {
                // as in the idle wait: a stray interrupt does not end the worker
            }
        }
    }

    /** A claim that found nothing changes nothing: the worker waits for new work, and claims it as soon as allowed. */
    private void gatherAfter(WorkQueue.Claimed lanes) {
        if (lanes.items() > 0) {
            gatheredUntil = System.nanoTime() + gathering.after(lanes.items(), lanes.runs().size(), lanes.lanesLooked() >= LANES_PER_CLAIM);
        }
    }

    /**
     * Queued runs for this worker: one when there are no more runs than workers (each gets its
     * own at once), else up to {@code work.run-size} items (unless one run is longer), recorded in
     * one commit; a slow handler hands the rest of its slice on ({@link #handBackStalled}).
     */
    private List<ActiveRun> takeSlice() {
        int share = claimed.size() <= options.concurrency() ? 1 : Integer.MAX_VALUE;
        List<ActiveRun> slice = new ArrayList<>();
        int items = 0;
        while (slice.size() < share && items < options.runSize()) {
            ActiveRun run = claimed.poll();
            if (run == null) {
                break;
            }
            if (run.state.compareAndSet(ActiveRun.QUEUED, ActiveRun.SLICED)) {
                slice.add(run);
                items += run.run.items().size();
            }
        }
        return slice;
    }

    /**
     * Claims the runs of up to {@link #LANES_PER_CLAIM} due lanes and queues them here; other
     * idle workers are woken to take their share.
     * @return whether anything was claimed
     */
    private boolean claimLanes() throws SQLException {
        // One worker of this process claims lanes at a time: one claim takes all that is due (up
        // to its limit), so a second one at the same moment would only split it into smaller
        // claims, each with its own commits, competing for the same lanes. The next one waits and
        // then claims what is still due, so a nudge it was woken by is never lost.
        laneClaim.lock();
        try {
            gather();
            WorkQueue.Claimed lanes = queue.claimLanes(worker, options.claim(), options.runSize(), LANES_PER_CLAIM,
                    options.orderedKinds(), handledKinds());
            gatherAfter(lanes);
            laneClaimedAt = System.nanoTime();
            queueRuns(lanes.runs());
            return !lanes.runs().isEmpty();
        } finally {
            laneClaim.unlock();
        }
    }

    private boolean claimUnlaned() throws SQLException {
        WorkRun run = queue.claimUnlaned(worker, options.claim(), handledKinds());
        if (run != null) {
            queueRuns(List.of(run));
        }
        return run != null;
    }

    private void queueRuns(List<WorkRun> runs) {
        for (WorkRun run : runs) {
            ActiveRun active = new ActiveRun(run);
            this.active.put(run.token(), active);
            claimed.add(active);
        }
        if (runs.size() > 1) {
            wakeAll();
        }
    }

    /** Whether this process runs work of this kind (a handler is configured or registered here). */
    public boolean handles(String kind) {
        return handledKinds().contains(kind);
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

    /**
     * Runs the slice's runs one after the other, each in its order, and records their outcomes
     * together: at the end, or every {@link #FLUSH_EVERY} of a long slice. A run handed back
     * meanwhile (its slice stalled on a slow handler) is skipped: another worker has it.
     */
    private void handle(Slice slice) {
        slices.add(slice);
        // Only what this worker started: a run handed back from this slice may be another worker's now.
        List<ActiveRun> started = new ArrayList<>();
        try {
            ClaimItems items = new ClaimItems(slice.runs.stream().map(r -> r.run).toList());
            List<WorkQueue.Finished> unrecorded = new ArrayList<>();
            // Effects performed (or refused) whose record the database could not take: written first.
            List<EffectGuard.Settlement> settlements = new ArrayList<>();
            long recordedAt = System.nanoTime();
            for (ActiveRun run : slice.runs) {
                if (!run.state.compareAndSet(ActiveRun.SLICED, ActiveRun.STARTED)) {
                    continue;
                }
                started.add(run);
                List<WorkItem> runItems = run.run.items();
                List<WorkQueue.Outcome> outcomes = new ArrayList<>();
                int next = 0;
                while (next < runItems.size() && running && !run.lost.get()) {
                    Exchange exchange = items.exchange(run.run, next);
                    slice.handlerSince = System.nanoTime();
                    WorkQueue.Outcome outcome = runItem(runItems.get(next), exchange);
                    settlements.addAll(EffectGuard.unrecorded(exchange));
                    slice.handlerSince = 0;
                    next++;
                    outcomes.add(outcome);
                    // A deferral holds the whole chat (its limit), ordered or not.
                    if (outcome.isDeferred() || run.run.ordered() && outcome.holdsItsChat()) {
                        break;
                    }
                    if (next < runItems.size() && System.nanoTime() - recordedAt >= FLUSH_EVERY.toNanos()) {
                        unrecorded.add(new WorkQueue.Finished(run.run, List.copyOf(outcomes), null));
                        outcomes.clear();
                        record(unrecorded, settlements);
                        unrecorded.clear();
                        settlements.clear();
                        recordedAt = System.nanoTime();
                    }
                }
                if (!run.lost.get()) {
                    unrecorded.add(new WorkQueue.Finished(run.run, outcomes, runItems.subList(next, runItems.size())));
                }
                if (System.nanoTime() - recordedAt >= FLUSH_EVERY.toNanos()) {
                    record(unrecorded, settlements);
                    unrecorded.clear();
                    settlements.clear();
                    recordedAt = System.nanoTime();
                }
            }
            record(unrecorded, settlements);
        } finally {
            slices.remove(slice);
            started.forEach(r -> active.remove(r.run.token()));
            // After a failure that ended the slice early, the runs it never started go back at once;
            // otherwise the heartbeat would extend their claims for as long as this process runs. The
            // run that failed waits for its claim to expire, its attempt counted, as after a crash.
            giveBack(slice.runs.stream().filter(r -> r.state.compareAndSet(ActiveRun.SLICED, ActiveRun.STARTED)).toList());
        }
    }

    /**
     * The runs of slices whose handler has run longer than {@link #STALL} and that no worker
     * started yet go back to the queue here, so one slow handler holds up only its own chat.
     */
    private void handBackStalled() {
        long now = System.nanoTime();
        int handedBack = 0;
        for (Slice slice : slices) {
            if (!slice.stalled(now)) {
                continue;
            }
            for (ActiveRun run : slice.runs) {
                if (run.state.compareAndSet(ActiveRun.SLICED, ActiveRun.QUEUED)) {
                    claimed.addFirst(run);
                    handedBack++;
                }
            }
        }
        if (handedBack > 0) {
            LOG.debug("work: {} run(s) waiting behind a slow handler went to other workers", handedBack);
            wakeAll();
        }
    }

    /**
     * The exchanges of a slice's items, filled from their rows a few at a time (the items of
     * several runs together where the kind reads rows together), so a slice's items are never all
     * in memory at once.
     */
    private final class ClaimItems {
        private final List<WorkItem> all;
        private final Map<Long, Integer> runStarts = new HashMap<>();
        private final Exchange[] loaded;

        ClaimItems(List<WorkRun> runs) {
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
                int limit = Math.min(all.size(), at + loadTogether(kind));
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

    private int loadTogether(String kind) {
        WorkSource source = source(kind);
        return source == null ? 1 : Math.max(1, source.loadTogether());
    }

    /** One exchange per item, filled from the items' rows (read together where the kind can). */
    private List<Exchange> load(String kind, List<WorkItem> items) {
        List<Exchange> exchanges = new ArrayList<>(items.size());
        for (WorkItem item : items) {
            Exchange exchange = new DefaultExchange(camel);
            setWorkHeaders(exchange.getMessage(), item);
            exchanges.add(exchange);
        }
        WorkSource source = source(kind);
        if (source == null) {
            exchanges.forEach(e -> e.setException(new IllegalStateException("no handler is configured for work of kind " + kind)));
            return exchanges;
        }
        try (Connection c = queue.dataSource().getConnection()) {
            source.loadRun(c, items, exchanges);
        } catch (SQLException e) {
            exchanges.forEach(exchange -> exchange.setException(e));
        }
        return exchanges;
    }

    /**
     * Records what was done with these runs in one commit; runs whose claim was lost are marked so
     * and go no further. A database that is away (a failover, a restart) does not leave the chats
     * claimed until their claims expire: the worker keeps trying for as long as a claim lasts, the
     * claims extended meanwhile, so the chats go on within a few seconds of the database's return.
     */
    private void record(List<WorkQueue.Finished> finished, List<EffectGuard.Settlement> settlements) {
        if (finished.isEmpty()) {
            return;
        }
        boolean settled = settlements.isEmpty();
        int items = finished.stream().mapToInt(f -> f.outcomes().size()).sum();
        long giveUpAt = System.nanoTime() + options.claim().toNanos();
        for (int attempt = 1; ; attempt++) {
            try {
                if (!settled) {
                    // Before the items' outcomes: an item that runs again then finds its effect settled, not "started".
                    effects.write(settlements);
                    settled = true;
                }
                for (Long token : queue.finish(finished)) {
                    ActiveRun run = active.get(token);
                    int dropped = finished.stream().filter(f -> f.run().token() == token).mapToInt(f -> f.outcomes().size()).sum();
                    if (run != null) {
                        claimLost(run, dropped);
                    }
                }
                if (attempt >= RECORD_ATTEMPTS) {
                    LOG.info("work: outcomes of {} item(s) recorded at attempt {}", items, attempt);
                }
                return;
            } catch (SQLException e) {
                if (!running || System.nanoTime() - giveUpAt >= 0) {
                    // The claims expire and the items run again: handlers are guarded for that.
                    for (WorkQueue.Finished f : finished) {
                        ActiveRun run = active.get(f.run().token());
                        if (run != null) {
                            run.lost.set(true);
                        }
                    }
                    LOG.warn("work: outcomes of {} item(s) not recorded ({}); they run again once their claims expire", items, e.getMessage());
                    return;
                }
                if (attempt == RECORD_ATTEMPTS) {
                    LOG.warn("work: outcomes of {} item(s) not recorded yet ({}); trying every {} s for up to {} s, their chats' claims held",
                            items, e.getMessage(), RECORD_PAUSE_CAP.toSeconds(), options.claim().toSeconds());
                }
                pauseBeforeRecording(attempt);
            }
        }
    }

    private static void pauseBeforeRecording(int attempt) {
        try {
            Thread.sleep(Math.min(500L * attempt, RECORD_PAUSE_CAP.toMillis()));
        } catch (InterruptedException e) {
            // as in the idle wait: a stray interrupt (e.g. left by a handler) only ends the pause
        }
    }

    private void claimLost(ActiveRun current, int dropped) {
        if (current.lost.compareAndSet(false, true)) {
            WorkRun run = current.run;
            LOG.warn("work: the claim on {} item(s) of {}{} (from item {}) was released or taken over; {} outcome(s) of this"
                            + " worker dropped, the items are another claim's now", run.items().size(), run.kind(),
                    run.laned() ? " chat " + run.chatKey() : "", run.items().get(0).id(), dropped);
        }
        metrics.dropped(current.run.kind(), dropped);
    }

    private WorkQueue.Outcome runItem(WorkItem item, Exchange exchange) {
        long start = System.nanoTime();
        if (exchange.getException() == null) {
            try {
                producer.send(source(item.kind()).endpointUri(), exchange);
            } catch (RuntimeException e) {
                exchange.setException(e);
            }
        }
        WorkQueue.Outcome outcome = outcomes.of(item, exchange);
        metrics.handled(item, outcome, System.nanoTime() - start);
        return outcome;
    }

    /**
     * Beats, extends the claims of runs still running here, and releases the claims of processes
     * that stopped beating. Runs until the last worker has stopped.
     */
    private void heartbeatLoop() {
        Duration extendEvery = options.claim().dividedBy(3);
        Duration tick = extendEvery.compareTo(options.heartbeat()) < 0 ? extendEvery : options.heartbeat();
        // Stalled slices are looked at twice per STALL; the database work below keeps its own pace.
        tick = tick.compareTo(STALL.dividedBy(2)) < 0 ? tick : STALL.dividedBy(2);
        long lastBeat = System.nanoTime();
        long lastExtension = System.nanoTime();
        boolean failing = false;
        while (beating) {
            synchronized (beatPause) {
                try {
                    beatPause.wait(Math.max(1, tick.toMillis()));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
            if (!beating) {
                return;
            }
            handBackStalled();
            try {
                if (System.nanoTime() - lastBeat >= options.heartbeat().toNanos() - tick.toNanos() / 2) {
                    heartbeat.beat();
                    lastBeat = System.nanoTime();
                    int released = queue.releaseClaimsOfDeadProcesses(worker, options.silence());
                    if (released > 0) {
                        LOG.warn("work: released {} claimed item(s) of process(es) silent for more than {} s; they run again now",
                                released, options.silence().toSeconds());
                        nudge();
                    }
                }
                if (System.nanoTime() - lastExtension >= extendEvery.toNanos() - tick.toNanos() / 2) {
                    extendClaims();
                    lastExtension = System.nanoTime();
                }
                failing = false;
            } catch (SQLException e) {
                if (!failing) {
                    LOG.warn("work: heartbeat failed ({}); after {} s without one, other processes take this one's claims"
                            + " and its outcomes are dropped", e.getMessage(), options.silence().toSeconds());
                }
                failing = true;
            }
        }
    }

    private void extendClaims() throws SQLException {
        List<Long> tokens = List.copyOf(active.keySet());
        if (tokens.isEmpty()) {
            return;
        }
        Set<Long> held = Set.copyOf(queue.extend(worker, tokens, options.claim()));
        for (Long token : tokens) {
            ActiveRun run = active.get(token);
            if (!held.contains(token) && run != null) {
                claimLost(run, 0);
            }
        }
    }

    private static void setWorkHeaders(Message message, WorkItem item) {
        message.setHeader(IDEMPOTENCY_KEY, item.sourceKey());
        message.setHeader(WORK_ITEM_ID, item.id());
        message.setHeader(WORK_KIND, item.kind());
        message.setHeader(WORK_ATTEMPT, item.attempts());
    }
}
