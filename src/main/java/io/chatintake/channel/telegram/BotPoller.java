package io.chatintake.channel.telegram;

import io.chatintake.channel.telegram.TelegramInboxConsumerHealthCheck.Phase;
import io.chatintake.store.OperatorPause;
import io.chatintake.support.CrashPoint;
import io.chatintake.work.Backoff;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One bot's polling, as a chain of short steps on a pool every bot shares: each {@link #step()} is
 * one poll -> store -> confirm, the next one starts when it has ended, and whatever a step throws
 * goes to the {@link PollFailurePolicy} for it, which records it and says how long to wait. No
 * thread waits for a long poll (the HTTP client's selector serves them all), so a bot costs no
 * thread of its own, polling or idle. A step:
 * <ol>
 * <li>reads the bot's identity (getMe: its id is the storage key, never the token), takes its
 *     {@link PollLease}, reads its {@link OffsetCheckpoint}, refuses to poll while a webhook is set
 *     (an advisory {@link WebhookCheck}: a server that cannot tell does not stop polling);</li>
 * <li>getUpdates with the saved offset; an empty batch changes nothing;</li>
 * <li>stores a non-empty batch with the next offset in one transaction ({@link TelegramUpdateStore});</li>
 * <li>only after the commit hands the stored rows on and returns, so the next poll confirms them.</li>
 * </ol>
 * A failed transaction never advances the offset: Telegram sends the unconfirmed batch again.
 * While an operator has the bot paused ({@link OperatorPause}) a step only keeps the lease it holds:
 * no getUpdates, so nothing more is confirmed, and polling goes on from the same offset on resume.
 * A last success older than 24 h is recorded as a possible {@link LossWindow} even while the
 * lease is held.
 * <p>
 * A poller cut off from the database stops on its own clock: a getUpdates starts only while the
 * lease, counted by System.nanoTime() from when the statement that last renewed it was sent (the
 * database's expiry is no earlier), still holds for the whole long poll and {@link #LEASE_MARGIN};
 * otherwise the lease is renewed first, and while that fails nothing is polled, so another process
 * that takes the lease once it expired never polls beside this one. Back in reach, it polls again
 * if its lease was not taken over meanwhile, else stands by (its late writes are refused by the
 * fencing token).
 */
final class BotPoller {
    private static final Logger LOG = LoggerFactory.getLogger(BotPoller.class);
    /** An answer that waited this long for a thread of the shared pool: the process is short of cores for intake. */
    static final Duration ANSWER_QUEUED = Duration.ofMillis(50);
    /** A poll starts only while the lease holds this long past its long-poll timeout: the answer's way back, scheduling. */
    static final Duration LEASE_MARGIN = Duration.ofSeconds(2);

    /** Where stored updates go on from: told after each commit, and when a lease is taken. */
    interface StoredUpdatesListener {
        /** The lease was just taken: what an earlier holder stored and did not hand on comes first. */
        void leaseTaken(PollLease.Held lease);

        /**
         * A batch's transaction failed, maybe after its commit went through (the answer lost with the
         * connection): polling again finds those updates stored and hands none of them on, so what
         * was stored under the lease is read back from storage.
         */
        void storeUncertain(PollLease.Held lease);

        /**
         * @param fullBatch Telegram answered with a full batch, so it likely holds more
         * @param answerQueued the answer waited at least {@link #ANSWER_QUEUED} for a thread to store it
         */
        void stored(BotApiClient.BotIdentity identity, TelegramUpdateStore.StoredBatch batch, boolean fullBatch, boolean answerQueued);
    }

    /** What a poller is built from; one per bot. */
    record Parts(String bot, String tokenVariable, BotApiClient client, PollLease leases, LeaseShare share,
            OffsetCheckpoint checkpoints, TelegramUpdateStore updates, LossWindow lossWindows, TelegramMetrics metrics,
            TelegramInboxConsumerHealthCheck health, Clock clock, String holder, OperatorPause.Watch pauses) {
    }

    private final Parts parts;
    private final TelegramInboxEndpoint endpoint;
    private final WebhookCheck webhookCheck;
    private final StoredUpdatesListener sink;
    private final PollFailurePolicies failures = new PollFailurePolicies();
    private final Backoff backoff;
    private final Duration leaseDuration;
    private final Duration renewEvery;
    /** How long the lease must still hold when a getUpdates starts. */
    private final Duration pollSpan;
    private final ScheduledExecutorService pool;
    private final CompletableFuture<Void> stopped = new CompletableFuture<>();
    private final Object phase = new Object();
    private volatile boolean running = true;
    // Guarded by phase: the next step waiting its turn, the getUpdates waiting for its answer.
    private ScheduledFuture<?> pending;
    private CompletableFuture<List<BotApiClient.RawUpdate>> inFlight;
    private boolean finished;

    // Only the step in progress reads and writes these: one at a time, each started after the last ended.
    private BotApiClient.BotIdentity identity;
    private PollLease.Held lease;
    private long offset;
    private Instant lastSuccess;
    /** System.nanoTime() when the statement that took or last renewed the lease was sent. */
    private long leaseRenewedAt;
    /** Holding a lease that no renewal could keep: polling stopped until the database answers again. */
    private boolean cutOff;
    /** How long the lease still held, by this process's clock, when the last getUpdates started. */
    private long lastPollLeaseLeft;
    private boolean standbyLogged;
    private boolean idRestartLogged;
    /** nanoTime until which Telegram may still hold a getUpdates this poller gave up on when stopped. */
    private long abandonedPollUntil;

    /** @param pool shared by every bot's poller: it runs their steps, never waits for a long poll */
    BotPoller(Parts parts, TelegramInboxEndpoint endpoint, StoredUpdatesListener sink, ScheduledExecutorService pool) {
        this.parts = parts;
        this.pool = pool;
        this.endpoint = endpoint;
        this.sink = sink;
        this.webhookCheck = new WebhookCheck(parts.bot(), parts.client(), parts.metrics(), parts.clock());
        this.backoff = new Backoff(Duration.ofMillis(endpoint.getBackoffBaseMillis()), Duration.ofMillis(endpoint.getBackoffCapMillis()));
        this.leaseDuration = endpoint.leaseDuration();
        // Renewing costs a commit; the batch transaction renews too. A renewal this recent still
        // covers a whole long poll (timeout + the answer's grace) with room to spare.
        this.renewEvery = Duration.ofMillis(Math.max(0, Math.min(leaseDuration.toMillis() / 4,
                leaseDuration.minusSeconds(endpoint.getTimeoutSeconds() + 20L).toMillis())));
        this.pollSpan = Duration.ofSeconds(endpoint.getTimeoutSeconds()).plus(LEASE_MARGIN);
    }

    /** Starts the steps on the shared pool; {@link #stopped()} completes once they have ended. */
    void start() {
        next(Duration.ZERO);
    }

    /**
     * Ends the steps: a long poll in progress is abandoned, a commit in progress is let finish;
     * then the lease is released.
     */
    void stop() {
        boolean idle = false;
        synchronized (phase) {
            running = false;
            if (pending != null && pending.cancel(false)) {
                idle = true; // waiting between steps: nothing else will end it
            }
            if (inFlight != null) {
                inFlight.cancel(true);
            }
        }
        if (idle) {
            finish();
        }
    }

    CompletableFuture<Void> stopped() {
        return stopped;
    }

    /** The next step after {@code wait} on the shared pool, or the end once stopped. */
    private void next(Duration wait) {
        synchronized (phase) {
            if (running) {
                try {
                    pending = pool.schedule(this::step, wait.toMillis(), TimeUnit.MILLISECONDS);
                    return;
                } catch (RejectedExecutionException e) {
                    running = false; // the component is stopping
                }
            }
        }
        finish();
    }

    /**
     * One poll -> store -> confirm: what must hold before polling (identity, lease), then
     * getUpdates, which holds no thread while Telegram holds it; its answer continues in
     * {@link #afterPoll} on the shared pool again.
     */
    private void step() {
        Duration wait;
        try {
            wait = beforePoll();
            if (wait == null) {
                poll();
                return;
            }
        } catch (Exception e) {
            wait = failed(e);
        }
        next(wait);
    }

    /** @return how long to stand by, or null when ready to poll */
    private Duration beforePoll() throws Exception {
        if (lease != null) {
            watchForLoss(lease.botId());
        }
        Optional<OperatorPause.Paused> paused = Optional.ofNullable(parts.pauses().paused().get(parts.bot()));
        if (paused.isPresent()) {
            // Kept, with the candidacy, so that the shares stay as they were and polling goes on at once on resume.
            if (lease != null && renewLeaseIfDue()) {
                parts.share().candidate(lease.botId());
            }
            parts.health().enter(Phase.PAUSED, "by " + paused.get().by() + " since " + paused.get().since());
            return OperatorPause.Watch.LOOK_EVERY;
        }
        if (identity == null) {
            identity = parts.client().getMe();
            LOG.info("telegram bot '{}': Bot API identity @{} (bot id {})", parts.bot(), identity.username(), identity.id());
        }
        if (lease == null && !takeLease()) {
            return standbyInterval();
        }
        if (!renewLeaseIfDue()) {
            return standbyInterval();
        }
        if (!leaseCoversPoll()) {
            // The renewal answered too late for a whole poll within the lease: a database this slow is as good as away.
            stopPollingCutOff();
            return backoff();
        }
        parts.share().candidate(lease.botId());
        if (offset < 0) {
            // A negative offset makes Telegram forget queued updates: never send one.
            throw new IllegalStateException("refusing to poll with negative offset " + offset);
        }
        return null;
    }

    private void poll() {
        synchronized (phase) {
            if (running) {
                long started = System.nanoTime();
                lastPollLeaseLeft = leaseRenewedAt + leaseDuration.toNanos() - started;
                inFlight = parts.client().getUpdatesAsync(offset, endpoint.getLimit(), endpoint.getTimeoutSeconds(), endpoint.allowedUpdateList());
                // The answer arrives on the HTTP client's selector thread, which must never wait for a commit.
                inFlight.whenComplete((batch, failure) -> {
                    long answered = System.nanoTime();
                    try {
                        pool.execute(() -> afterPoll(batch, failure, started, answered));
                    } catch (RejectedExecutionException e) {
                        afterPoll(batch, failure, started, answered);
                    }
                });
                return;
            }
        }
        finish();
    }

    private void afterPoll(List<BotApiClient.RawUpdate> batch, Throwable failure, long started, long answered) {
        boolean answerQueued = System.nanoTime() - answered >= ANSWER_QUEUED.toNanos();
        Duration wait;
        try {
            if (failure != null) {
                if (!running) {
                    // Abandoned here, the request may still wait at Telegram until its timeout.
                    abandonedPollUntil = started + Duration.ofSeconds(endpoint.getTimeoutSeconds() + 1L).toNanos();
                    finish();
                    return;
                }
                throw failure instanceof Exception e ? e : new IllegalStateException(failure);
            }
            wait = confirm(batch, answerQueued);
        } catch (Exception e) {
            wait = failed(e);
        }
        next(wait);
    }

    /**
     * The batch and the next offset stored in one transaction, or an empty poll noted; the next
     * getUpdates then confirms them at Telegram.
     *
     * @return how long to wait before the next step: zero while polling, a standby interval after handing the lease over
     */
    private Duration confirm(List<BotApiClient.RawUpdate> batch, boolean answerQueued) throws Exception {
        CrashPoint.reach(CrashPoint.TELEGRAM_AFTER_RECEIVE);
        if (batch.isEmpty()) {
            parts.checkpoints().recordEmptyPoll(identity.id());
        } else {
            store(batch, answerQueued);
        }
        lastSuccess = parts.clock().instant();
        parts.metrics().polled(offset, lastSuccess.toEpochMilli());
        parts.health().enter(Phase.POLLING, null);
        backoff.reset();
        webhookCheck.whenDue();
        if (parts.share().handOver(lease.botId())) {
            // A batch boundary: everything received is stored and confirmed, nothing is in flight.
            releaseLease();
            LOG.info("telegram bot '{}': handed the poll lease over to a process below its share ({}); standing by",
                    parts.bot(), describe(parts.share().counts()));
            standbyLogged = true;
            parts.health().enter(Phase.STANDBY, "handed the poll lease over to even out the bots across processes");
            return standbyInterval();
        }
        return Duration.ZERO;
    }

    private Duration failed(Exception e) {
        if (running && e instanceof SQLException && lease != null && !leaseCoversPoll()) {
            stopPollingCutOff();
        }
        return running ? failures.forFailure(e).handle(e, this) : Duration.ZERO;
    }

    /** Whether the lease, by this process's clock, still holds for a whole poll started now. */
    private boolean leaseCoversPoll() {
        return System.nanoTime() + pollSpan.toNanos() - (leaseRenewedAt + leaseDuration.toNanos()) < 0;
    }

    /** Told once per cut-off: no getUpdates until a renewal goes through. */
    private void stopPollingCutOff() {
        if (!cutOff) {
            cutOff = true;
            LOG.warn("cut off from the database: stopped polling bot '{}' before its lease could expire (no renewal went through in time;"
                            + " the last getUpdates started with {} ms of the lease left, for a {} s long poll); polling again once a"
                            + " renewal goes through", parts.bot(), TimeUnit.NANOSECONDS.toMillis(lastPollLeaseLeft), endpoint.getTimeoutSeconds());
        }
    }

    /** Once, after the last step: the lease released, the candidacy withdrawn. */
    private void finish() {
        synchronized (phase) {
            if (finished) {
                return;
            }
            finished = true;
        }
        try {
            boolean held = lease != null;
            releaseLease();
            if (identity != null) {
                withdrawQuietly(identity.id());
            }
            LOG.info("telegram bot '{}': polling stopped{}", parts.bot(), held ? "; lease released for another process" : "");
        } finally {
            stopped.complete(null);
        }
    }

    /** @return whether this process now holds the lease; false: standing by */
    private boolean takeLease() throws SQLException, BotApiException {
        LeaseShare share = parts.share();
        share.candidate(identity.id());
        long sent = System.nanoTime();
        Optional<PollLease.Held> acquired = parts.leases().tryAcquire(identity.id(), parts.holder(), leaseDuration,
                share.belowShare() ? Duration.ZERO : share.overflowAfter());
        if (acquired.isEmpty()) {
            if (!standbyLogged) {
                logStandby(identity.id());
                standbyLogged = true;
            }
            parts.health().enter(Phase.STANDBY, "another process holds the poll lease");
            return false;
        }
        standbyLogged = false;
        lease = acquired.get();
        share.held(1);
        leaseRenewedAt = sent;
        OffsetCheckpoint.Saved saved = parts.checkpoints().load(identity.id(), parts.bot());
        offset = saved.nextOffset();
        lastSuccess = saved.lastPollAt();
        if (lastSuccess != null) {
            parts.metrics().lastSuccess(lastSuccess);
        }
        recordLossWindow(identity.id(), saved.lastSuccessfulPoll());
        sink.leaseTaken(lease);
        Optional<BotApiClient.WebhookInfo> webhook = webhookCheck.now();
        if (webhook.isPresent() && webhook.get().webhookSet()) {
            throw BotApiException.fromAnswer(409, "Conflict: a webhook is set for this bot", 0);
        }
        LOG.info("telegram bot '{}': polling as {} (fencing token {}), from saved offset {}; {} update(s) pending at Telegram",
                parts.bot(), parts.holder(), lease.fencingToken(), offset,
                webhook.map(w -> Long.toString(w.pendingUpdateCount())).orElse("unknown"));
        parts.health().enter(Phase.POLLING, null);
        return true;
    }

    /**
     * Renews the lease when due, counting it from when the renewal was sent.
     * @return false when a renewal after a cut-off found the lease taken over: told here, and the
     *         next step stands by for it; otherwise a lease taken over throws
     */
    private boolean renewLeaseIfDue() throws SQLException, TelegramUpdateStore.LeaseLostException {
        if (System.nanoTime() - leaseRenewedAt < renewEvery.toNanos()) {
            return true;
        }
        long sent = System.nanoTime();
        boolean held = parts.leases().renew(lease, leaseDuration);
        if (held) {
            leaseRenewedAt = sent;
        }
        if (cutOff) {
            cutOff = false;
            if (!held) {
                LOG.info("database reachable again: telegram bot '{}': another process took its poll lease over meanwhile"
                        + " (fencing token {} refused); standing by for it", parts.bot(), lease.fencingToken());
                leaseLost();
                parts.health().enter(Phase.STANDBY, "the poll lease was taken over by another process");
                return false;
            }
            LOG.info("database reachable again: telegram bot '{}': its poll lease was not taken over; polling again from offset {}",
                    parts.bot(), offset);
        }
        if (!held) {
            throw new TelegramUpdateStore.LeaseLostException(lease.botId());
        }
        return true;
    }

    /** The batch and the next offset in one transaction; only then is the offset this poller's. */
    private void store(List<BotApiClient.RawUpdate> batch, boolean answerQueued) throws SQLException, TelegramUpdateStore.LeaseLostException {
        TelegramUpdateStore.StoredBatch result;
        long sent = System.nanoTime();
        try {
            result = parts.updates().store(lease, leaseDuration, batch);
        } catch (SQLException e) {
            sink.storeUncertain(lease);
            throw e;
        }
        leaseRenewedAt = sent;
        CrashPoint.reach(CrashPoint.TELEGRAM_AFTER_COMMIT);
        long lowest = batch.stream().mapToLong(BotApiClient.RawUpdate::updateId).min().getAsLong();
        if (lowest < offset && !idRestartLogged) {
            LOG.warn("telegram bot '{}': update ids restarted below the checkpoint (asked from {}, got {}), as Telegram"
                    + " does after a week without updates; following the server, no update is dropped", parts.bot(), offset, lowest);
            idRestartLogged = true;
        }
        result.gap().ifPresent(gap -> {
            LOG.warn("telegram bot '{}': {} (a forgotten poller or a manual getUpdates with a higher offset);"
                    + " they never reached this inbox; recorded in telegram_gap", parts.bot(), gap.describe());
            parts.metrics().gap();
        });
        offset = result.nextOffset();
        parts.metrics().stored(result.stored().size(), result.duplicates());
        reportRaw(result.stored());
        sink.stored(identity, result, batch.size() >= endpoint.getLimit(), answerQueued);
    }

    /** Updates stored raw are confirmed and handed on like the others; a person may want to know they came. */
    private void reportRaw(List<TelegramUpdateStore.StoredUpdate> stored) {
        for (TelegramUpdateStore.StoredUpdate update : stored) {
            if (update.rawReason() != null) {
                parts.metrics().raw();
                LOG.warn("telegram bot '{}': update {} cannot be stored as jsonb ({}); stored raw as inbox row {}, confirmed and"
                        + " handed on with header {}", parts.bot(), update.updateId(), update.rawReason(), update.rowId(),
                        TelegramInboxConstants.RAW_REASON);
            }
        }
    }

    /**
     * A poller that keeps its lease while every poll fails loses updates as surely as one that is
     * not running: once its last success is older than Telegram's retention, the window is recorded
     * (and counted) at once, then extended on every later failure, not only at the next lease take.
     * The checkpoint's time is the window's start, the same one a later lease take would see.
     */
    private void watchForLoss(long botId) {
        if (lastSuccess == null || !LossWindow.missed(lastSuccess, parts.clock().instant())) {
            return;
        }
        try {
            recordLossWindow(botId, parts.checkpoints().find(botId).flatMap(OffsetCheckpoint.Saved::lastSuccessfulPoll));
        } catch (SQLException e) {
            // Never in the way of the next poll; the seconds-since-last-poll gauge tells the story meanwhile.
            LOG.warn("telegram bot '{}': the possible loss window could not be recorded yet ({}); tried again after the next failure",
                    parts.bot(), e.getMessage());
        }
    }

    private void recordLossWindow(long botId, Optional<Instant> lastSuccessfulPoll) throws SQLException {
        parts.lossWindows().recordIfMissed(botId, lastSuccessfulPoll, parts.clock().instant()).ifPresent(w -> {
            parts.metrics().lossWindow();
            LOG.warn("telegram bot '{}': last successful poll was {} (more than 24 h ago): updates Telegram received before {}"
                    + " may have expired unseen; recorded as a possible loss window", parts.bot(), w.from(),
                    w.to().minus(LossWindow.TELEGRAM_RETENTION));
        });
    }

    private void logStandby(long botId) throws SQLException {
        Optional<PollLease.Holder> current = parts.leases().current(botId);
        if (current.isPresent() && !current.get().expired()) {
            LOG.info("telegram bot '{}': another process holds the poll lease ({}); standing by", parts.bot(), current.get().holder());
        } else {
            LOG.info("telegram bot '{}': this process holds its share of poll leases ({}); standing by for a process below"
                    + " its share, taking the lease itself if it stays free for {} s", parts.bot(), describe(parts.share().counts()),
                    parts.share().overflowAfter().toSeconds());
        }
    }

    private static String describe(LeaseShare.Counts counts) {
        return counts.held() + " held here, at most " + counts.share() + " each: " + counts.bots() + " bot(s), "
                + counts.processes() + " process(es)";
    }

    private void withdrawQuietly(long botId) {
        try {
            parts.share().withdraw(botId);
        } catch (SQLException e) {
            LOG.warn("telegram bot '{}': could not withdraw from the poll candidates ({}); it stops counting after a lease period",
                    parts.bot(), e.getMessage());
        }
    }

    private Duration standbyInterval() {
        return Duration.ofMillis(Math.min(2000, leaseDuration.toMillis() / 4));
    }

    // What the failure policies act on.

    String bot() {
        return parts.bot();
    }

    String tokenVariable() {
        return parts.tokenVariable();
    }

    TelegramMetrics metrics() {
        return parts.metrics();
    }

    TelegramInboxConsumerHealthCheck health() {
        return parts.health();
    }

    /** The next wait of the poller's own exponential backoff, reset by the next successful poll. */
    Duration backoff() {
        return backoff.next();
    }

    /** Polling stopped for want of a renewal ({@link #stopPollingCutOff}): said once, not at every failure. */
    boolean cutOff() {
        return cutOff;
    }

    /** The offset polled from: unchanged by any failure. */
    long offset() {
        return offset;
    }

    /** Gives the lease up, for another process or a later step of this one. */
    void releaseLease() {
        if (lease != null) {
            parts.share().held(-1);
            try {
                // The next holder polls only once a getUpdates given up on by a stop has ended at Telegram.
                parts.leases().release(lease, Duration.ofNanos(Math.max(0, abandonedPollUntil - System.nanoTime())));
            } catch (SQLException e) {
                LOG.warn("telegram bot '{}': could not release the poll lease ({}); it expires on its own", parts.bot(), e.getMessage());
            }
            lease = null;
        }
    }

    /** The lease was taken over: nothing to release, the next step stands by for it. */
    void leaseLost() {
        cutOff = false;
        if (lease != null) {
            parts.share().held(-1);
            lease = null;
        }
    }

    /** The token changed or was refused: the next step asks who the bot is again. */
    void forgetIdentity() {
        identity = null;
    }
}
