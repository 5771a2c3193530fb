package io.chatintake.work;

import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Records what workers did with their runs, in one commit per call: effects performed (or
 * refused) whose record the database could not take first, then the items' outcomes. A database
 * that is away (a failover, a restart) does not leave the chats claimed until their claims expire,
 * nor lose what this process knows: the worker keeps trying for as long as a claim lasts, the
 * claims extended meanwhile, so the chats go on within a few seconds of the database's return.
 */
final class RecordRunResults {
    private static final Logger LOG = LoggerFactory.getLogger(RecordRunResults.class);
    /** Failed attempts at recording outcomes after which a warning says they are still being tried. */
    private static final int RECORD_ATTEMPTS = 4;
    private static final Duration RECORD_PAUSE_CAP = Duration.ofSeconds(2);

    private final WorkQueue queue;
    /** This process's claims' owner: its runs' work_run.process. */
    private final String worker;
    private final EffectGuard effects;
    private final ClaimedRuns runs;
    private final AtomicBoolean running;
    private final Duration claim;

    RecordRunResults(WorkQueue queue, String worker, EffectGuard effects, ClaimedRuns runs, AtomicBoolean running, Duration claim) {
        this.queue = queue;
        this.worker = worker;
        this.effects = effects;
        this.runs = runs;
        this.running = running;
        this.claim = claim;
    }

    /** These runs go back to the database as they were before their claim, in one commit, and are no longer this process's. */
    void giveBack(List<ActiveRun> given) {
        record(given.stream().map(run -> FinishedRun.givenBack(run.run)).toList(), List.of());
        // Also when recording failed: their claims then expire.
        given.forEach(runs::forget);
    }

    /** Records these runs' outcomes; runs whose claim was lost are marked so and go no further. */
    void record(List<FinishedRun> finished, List<EffectGuard.Settlement> settlements) {
        if (finished.isEmpty()) {
            return;
        }
        boolean settled = settlements.isEmpty();
        int items = finished.stream().mapToInt(f -> f.outcomes().size()).sum();
        for (FinishedRun f : finished) {
            ActiveRun run = f.ends() ? runs.get(f.run().token()) : null;
            if (run != null) {
                run.ending = true;
            }
        }
        long giveUpAt = System.nanoTime() + claim.toNanos();
        boolean answerMaybeLost = false;
        for (int attempt = 1; ; attempt++) {
            try {
                if (!settled) {
                    // Before the items' outcomes: an item that runs again then finds its effect settled, not "started".
                    effects.write(settlements);
                    settled = true;
                }
                for (Long token : queue.finish(finished)) {
                    ActiveRun run = runs.get(token);
                    List<RunResult> dropped = finished.stream().filter(f -> f.run().token() == token)
                            .flatMap(f -> f.outcomes().stream()).toList();
                    if (run != null && !(answerMaybeLost && recordedHere(dropped))) {
                        runs.claimLost(run, dropped.size(), queue);
                    }
                }
                // A run that ended is no longer this process's to extend, though its slice goes on.
                for (FinishedRun f : finished) {
                    ActiveRun run = f.ends() ? runs.get(f.run().token()) : null;
                    if (run != null) {
                        runs.forget(run);
                    }
                }
                if (attempt >= RECORD_ATTEMPTS) {
                    LOG.info("work: outcomes of {} item(s) recorded at attempt {}", items, attempt);
                }
                return;
            } catch (SQLException e) {
                // The failure may have come after the commit (a database restarting): the next try then finds its own outcomes recorded.
                answerMaybeLost = true;
                if (!running.get() || System.nanoTime() - giveUpAt >= 0) {
                    // The claims expire and the items run again: handlers are guarded for that.
                    for (FinishedRun f : finished) {
                        ActiveRun run = runs.get(f.run().token());
                        if (run != null) {
                            run.lost.set(true);
                        }
                    }
                    LOG.warn("work: outcomes of {} item(s) not recorded ({}); they run again once their claims expire", items, e.getMessage());
                    return;
                }
                if (attempt == RECORD_ATTEMPTS) {
                    LOG.warn("work: outcomes of {} item(s) not recorded yet ({}); trying every {} s for up to {} s, their chats' claims held",
                            items, e.getMessage(), RECORD_PAUSE_CAP.toSeconds(), claim.toSeconds());
                }
                pause(attempt);
            }
        }
    }

    /**
     * Whether a try whose answer was lost recorded these outcomes already: each run of them is in
     * work_run as this process's, at its attempt. A deferral leaves no run, so outcomes that are all
     * deferrals cannot tell, and count as a claim lost.
     */
    private boolean recordedHere(List<RunResult> outcomes) throws SQLException {
        List<RunResult> runsOfThem = outcomes.stream().filter(o -> !o.isDeferred()).toList();
        return !runsOfThem.isEmpty() && queue.recordedBy(worker, runsOfThem).size() == runsOfThem.size();
    }

    private static void pause(int attempt) {
        try {
            Thread.sleep(Math.min(500L * attempt, RECORD_PAUSE_CAP.toMillis()));
        } catch (InterruptedException e) {
            // as in the idle wait: a stray interrupt (e.g. left by a handler) only ends the pause
        }
    }
}
