package io.chatintake.channel.telegram;

import io.chatintake.support.CrashPoint;
import io.chatintake.support.ProcessIdentity;
import io.chatintake.channel.telegram.TelegramInboxConsumerHealthCheck.Phase;
import io.chatintake.config.Secret;
import io.chatintake.config.Settings;
import io.chatintake.support.MeterRegistryLookup;
import io.chatintake.work.Backoff;
import io.chatintake.work.WorkDispatcher;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.apache.camel.Exchange;
import org.apache.camel.Processor;
import org.apache.camel.support.DefaultConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The polling loop of one bot:
 * <ol>
 * <li>read the bot's identity (getMe: its id is the storage key, never the token), take its
 *     {@link PollLease}, read its {@link OffsetCheckpoint}, refuse to poll while a webhook is set
 *     (an advisory {@link WebhookCheck}: a server that cannot tell does not stop polling);</li>
 * <li>getUpdates with the saved offset; an empty batch changes nothing;</li>
 * <li>a non-empty batch is stored with the next offset in one transaction ({@link TelegramInbox});</li>
 * <li>only after the commit: the next poll, while the {@link UpdateScheduler} turns what was
 *     stored into work (or, without a work dispatcher, one exchange per newly stored update).</li>
 * </ol>
 * What the route does cannot change what was stored or confirmed: a failing route leaves the
 * update in the inbox. A failed transaction never advances the offset: Telegram sends the
 * unconfirmed batch again.
 * <p>
 * Its {@link TelegramInboxConsumerHealthCheck} says on {@code /observe/health} what the loop is
 * doing; a last success older than 24 h is recorded as a possible {@link LossWindow} even while
 * the lease is held.
 */
public class TelegramInboxConsumer extends DefaultConsumer {
    private static final Logger LOG = LoggerFactory.getLogger(TelegramInboxConsumer.class);

    private static final Duration REJECTED_TOKEN_RECHECK = Duration.ofMinutes(1);
    private static final Duration WEBHOOK_RECHECK = Duration.ofMinutes(1);

    /** Stored batches waiting for the route when no dispatcher runs them. */
    private static final int HANDOFF_BATCHES = 16;

    private final TelegramInboxEndpoint endpoint;
    private final String bot;
    private final Object phase = new Object();
    private volatile boolean running;
    private boolean inLongPoll;
    /** nanoTime until which Telegram may still hold a getUpdates this loop gave up on when stopped. */
    private long abandonedPollUntil;
    private Thread loop;
    private ThreadPoolExecutor handoff;

    private BotApiClient client;
    private PollLease leases;
    private LeaseShare share;
    private OffsetCheckpoint checkpoints;
    private TelegramInbox inbox;
    private ScheduleCheckpoint scheduleCheckpoints;
    private UpdateScheduler scheduler;
    private LossWindow lossWindows;
    private TelegramMetrics metrics;
    private WebhookCheck webhookCheck;
    private Clock clock;
    private String holder;
    private TelegramInboxConsumerHealthCheck health;

    public TelegramInboxConsumer(TelegramInboxEndpoint endpoint, Processor processor) {
        super(endpoint, processor);
        this.endpoint = endpoint;
        this.bot = endpoint.getBotName();
    }

    @Override
    protected void doStart() throws Exception {
        super.doStart();
        clock = endpoint.getComponent().getClock();
        health = new TelegramInboxConsumerHealthCheck(bot, clock);
        if (endpoint.getComponent().isHealthCheckConsumerEnabled()) {
            health.register(endpoint.getCamelContext());
        }
        Optional<Secret> token = endpoint.resolveToken();
        if (token.isEmpty()) {
            LOG.info("telegram bot '{}': no token configured ({}); polling is off", bot, Settings.envName(endpoint.tokenKey()));
            health.enter(Phase.OFF, "no token configured (" + Settings.envName(endpoint.tokenKey()) + ")");
            return;
        }
        List<String> notRequested = AllowedUpdates.notRequested(endpoint.allowedUpdateList());
        if (!notRequested.isEmpty()) {
            LOG.warn("telegram bot '{}': asking Telegram only for update types {} ({}); these are never received: {}", bot,
                    endpoint.allowedUpdateList(), Settings.envName(AllowedUpdates.KEY), notRequested);
        }
        DataSource dataSource = endpoint.getComponent().getDataSource();
        client = new BotApiClient(endpoint.resolveApiUrl(), token.get(), endpoint.getComponent().botApiHttp());
        leases = new PollLease(dataSource);
        checkpoints = new OffsetCheckpoint(dataSource);
        inbox = new TelegramInbox(dataSource, endpoint.getComponent().getChildMessageListener());
        scheduleCheckpoints = new ScheduleCheckpoint(dataSource);
        lossWindows = new LossWindow(dataSource);
        metrics = new TelegramMetrics(MeterRegistryLookup.of(endpoint.getCamelContext()), bot, clock);
        webhookCheck = new WebhookCheck(bot, client, metrics, clock);
        holder = ProcessIdentity.name();
        share = endpoint.getComponent().leaseShare(holder, endpoint.leaseDuration());
        running = true;
        handoff = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, new ArrayBlockingQueue<>(HANDOFF_BATCHES),
                r -> new Thread(r, "telegram-inbox-" + bot + "-handoff"), new ThreadPoolExecutor.AbortPolicy());
        loop = new Thread(this::pollLoop, "telegram-inbox-" + bot);
        loop.start();
    }

    @Override
    protected void doStop() throws Exception {
        running = false;
        synchronized (phase) {
            // Only a long poll is interrupted: a commit in progress is let finish.
            if (inLongPoll && loop != null) {
                loop.interrupt();
            }
            phase.notifyAll();
        }
        if (loop != null) {
            loop.join(Duration.ofSeconds(60).toMillis());
            loop = null;
        }
        if (scheduler != null) {
            scheduler.stop();
            scheduler = null;
        }
        if (handoff != null) {
            // Stored updates not handed over yet are not lost: the work dispatcher runs them.
            handoff.shutdown();
            handoff.awaitTermination(30, TimeUnit.SECONDS);
            handoff = null;
        }
        if (health != null) {
            health.unregister(endpoint.getCamelContext());
            health = null;
        }
        super.doStop();
    }

    private void pollLoop() {
        Backoff backoff = new Backoff(Duration.ofMillis(endpoint.getBackoffBaseMillis()), Duration.ofMillis(endpoint.getBackoffCapMillis()));
        Duration leaseDuration = endpoint.leaseDuration();
        BotApiClient.BotIdentity identity = null;
        PollLease.Held lease = null;
        long offset = 0;
        Instant lastSuccess = null;
        Instant lastRejectionLog = Instant.EPOCH;
        Instant lastWebhookLog = Instant.EPOCH;
        boolean standbyLogged = false;
        boolean idRestartLogged = false;
        // Renewing costs a commit; the batch transaction renews too. A renewal this recent still
        // covers a whole long poll (timeout + the answer's grace) with room to spare.
        Duration renewEvery = Duration.ofMillis(Math.max(0, Math.min(leaseDuration.toMillis() / 4,
                leaseDuration.minusSeconds(endpoint.getTimeout() + 20L).toMillis())));
        long leaseRenewedAt = System.nanoTime();
        while (running) {
            try {
                if (lease != null) {
                    watchForLoss(lease.botId(), lastSuccess);
                }
                if (identity == null) {
                    identity = client.getMe();
                    LOG.info("telegram bot '{}': Bot API identity @{} (bot id {})", bot, identity.username(), identity.id());
                }
                if (lease == null) {
                    share.candidate(identity.id());
                    Optional<PollLease.Held> acquired = leases.tryAcquire(identity.id(), holder, leaseDuration,
                            share.belowShare() ? Duration.ZERO : share.overflowAfter());
                    if (acquired.isEmpty()) {
                        if (!standbyLogged) {
                            logStandby(identity.id());
                            standbyLogged = true;
                        }
                        health.enter(Phase.STANDBY, "another process holds the poll lease");
                        pause(standbyInterval(leaseDuration));
                        continue;
                    }
                    standbyLogged = false;
                    lease = acquired.get();
                    share.held(1);
                    leaseRenewedAt = System.nanoTime();
                    OffsetCheckpoint.Saved saved = checkpoints.load(identity.id(), bot);
                    offset = saved.nextOffset();
                    lastSuccess = saved.lastPollAt();
                    if (lastSuccess != null) {
                        metrics.lastSuccess(lastSuccess);
                    }
                    recordLossWindow(identity.id(), saved.lastSuccessfulPoll());
                    scheduleFromStorage(lease);
                    Optional<BotApiClient.WebhookInfo> webhook = webhookCheck.now();
                    if (webhook.isPresent() && webhook.get().webhookSet()) {
                        throw BotApiException.fromAnswer(409, "Conflict: a webhook is set for this bot", 0);
                    }
                    LOG.info("telegram bot '{}': polling as {} (fencing token {}), from saved offset {}; {} update(s) pending at Telegram",
                            bot, holder, lease.fencingToken(), offset,
                            webhook.map(w -> Long.toString(w.pendingUpdateCount())).orElse("unknown"));
                    health.enter(Phase.POLLING, null);
                }
                if (System.nanoTime() - leaseRenewedAt >= renewEvery.toNanos()) {
                    if (!leases.renew(lease, leaseDuration)) {
                        throw new TelegramInbox.LeaseLostException(lease.botId());
                    }
                    leaseRenewedAt = System.nanoTime();
                }
                share.candidate(lease.botId());
                List<BotApiClient.RawUpdate> batch = longPoll(offset);
                if (!running && batch == null) {
                    break;
                }
                CrashPoint.reach(CrashPoint.TELEGRAM_AFTER_RECEIVE);
                if (batch.isEmpty()) {
                    checkpoints.recordEmptyPoll(identity.id());
                } else {
                    TelegramInbox.StoredBatch result = inbox.store(lease, leaseDuration, batch);
                    leaseRenewedAt = System.nanoTime();
                    CrashPoint.reach(CrashPoint.TELEGRAM_AFTER_COMMIT);
                    long lowest = batch.stream().mapToLong(BotApiClient.RawUpdate::updateId).min().getAsLong();
                    if (lowest < offset && !idRestartLogged) {
                        LOG.warn("telegram bot '{}': update ids restarted below the checkpoint (asked from {}, got {}), as Telegram"
                                + " does after a week without updates; following the server, no update is dropped", bot, offset, lowest);
                        idRestartLogged = true;
                    }
                    result.gap().ifPresent(gap -> {
                        LOG.warn("telegram bot '{}': {} (a forgotten poller or a manual getUpdates with a higher offset);"
                                + " they never reached this inbox; recorded in telegram_gap", bot, gap.describe());
                        metrics.gap();
                    });
                    offset = result.nextOffset();
                    metrics.stored(result.stored().size(), result.duplicates());
                    reportRaw(result.stored());
                    if (result.lastRowId() > 0) {
                        scheduler.follow(result.lastRowId());
                    }
                    handOff(identity, result.stored(), batch.size() >= endpoint.getLimit());
                }
                lastSuccess = clock.instant();
                metrics.polled(offset, lastSuccess.toEpochMilli());
                health.enter(Phase.POLLING, null);
                backoff.reset();
                webhookCheck.whenDue();
                if (share.handOver(lease.botId())) {
                    // A batch boundary: everything received is stored and confirmed, nothing is in flight.
                    lease = releaseQuietly(lease);
                    LOG.info("telegram bot '{}': handed the poll lease over to a process below its share ({}); standing by",
                            bot, describe(share.counts()));
                    standbyLogged = true;
                    health.enter(Phase.STANDBY, "handed the poll lease over to even out the bots across processes");
                    continue;
                }
            } catch (TelegramInbox.LeaseLostException e) {
                LOG.warn("telegram bot '{}': {}; polling stops here and waits for the lease", bot, e.getMessage());
                health.enter(Phase.STANDBY, "the poll lease was taken over by another process");
                share.held(-1);
                lease = null;
            } catch (SQLException e) {
                metrics.error(TelegramMetrics.PollError.STORAGE);
                health.enter(Phase.BACKING_OFF, "storage failed (SQLState " + e.getSQLState() + ")");
                Duration wait = backoff.next();
                LOG.warn("telegram bot '{}': storage failed, checkpoint not advanced; polling again from offset {} in {} ms: {}",
                        bot, offset, wait.toMillis(), e.getMessage());
                pause(wait);
            } catch (BotApiException e) {
                switch (e.kind()) {
                    case UNAUTHORIZED -> {
                        metrics.error(TelegramMetrics.PollError.UNAUTHORIZED);
                        health.enter(Phase.UNAUTHORIZED, "the Bot API refused the token; fix " + Settings.envName(endpoint.tokenKey()));
                        if (Duration.between(lastRejectionLog, Instant.now()).compareTo(REJECTED_TOKEN_RECHECK) >= 0) {
                            LOG.error("telegram bot '{}': the Bot API rejected the token ({}); this bot does not poll until the"
                                    + " token is fixed ({}), checked again every minute", bot, e.getMessage(), Settings.envName(endpoint.tokenKey()));
                            lastRejectionLog = Instant.now();
                        }
                        lease = releaseQuietly(lease);
                        identity = null;
                        pause(REJECTED_TOKEN_RECHECK);
                    }
                    case CONFLICT_WEBHOOK -> {
                        metrics.error(TelegramMetrics.PollError.WEBHOOK_SET);
                        health.enter(Phase.WEBHOOK_SET, "to poll, run: java -jar chat-intake.jar telegram switch-to-polling --bot " + bot);
                        if (Duration.between(lastWebhookLog, Instant.now()).compareTo(Duration.ofMinutes(5)) >= 0) {
                            LOG.error("telegram bot '{}': a webhook is set, so Telegram refuses getUpdates; not polling. To switch"
                                    + " this bot to polling without losing queued updates run: java -jar chat-intake.jar telegram"
                                    + " switch-to-polling --bot {}", bot, bot);
                            lastWebhookLog = Instant.now();
                        }
                        lease = releaseQuietly(lease);
                        pause(WEBHOOK_RECHECK);
                    }
                    case CONFLICT_OTHER_POLLER -> {
                        metrics.error(TelegramMetrics.PollError.CONFLICT_409);
                        health.enter(Phase.BACKING_OFF, "409: another getUpdates request is running");
                        Duration wait = backoff.next();
                        LOG.warn("telegram bot '{}': Telegram says another getUpdates request is running ({}); re-checking the lease in {} ms",
                                bot, e.getMessage(), wait.toMillis());
                        pause(wait);
                    }
                    case RATE_LIMITED -> {
                        metrics.error(TelegramMetrics.PollError.RATE_LIMITED_429);
                        Duration wait = Duration.ofSeconds(Math.max(1, e.retryAfterSeconds()));
                        health.enter(Phase.BACKING_OFF, "429: rate limited, retry after " + wait.toSeconds() + " s");
                        LOG.warn("telegram bot '{}': rate limited by Telegram, waiting retry_after = {} s", bot, wait.toSeconds());
                        pause(wait);
                    }
                    case SERVER, NETWORK, NOT_SENT -> {
                        if (!running) {
                            break;
                        }
                        metrics.error(e.kind() == BotApiException.Kind.SERVER ? TelegramMetrics.PollError.SERVER_5XX : TelegramMetrics.PollError.NETWORK);
                        health.enter(Phase.BACKING_OFF, e.getMessage());
                        Duration wait = backoff.next();
                        LOG.warn("telegram bot '{}': Bot API call failed ({}); checkpoint unchanged, retrying from offset {} in {} ms",
                                bot, e.getMessage(), offset, wait.toMillis());
                        pause(wait);
                    }
                }
            } catch (RuntimeException e) {
                health.enter(Phase.BACKING_OFF, "unexpected failure: " + e.getClass().getSimpleName());
                Duration wait = backoff.next();
                LOG.error("telegram bot '{}': unexpected failure, checkpoint unchanged; retrying in {} ms", bot, wait.toMillis(), e);
                pause(wait);
            }
        }
        releaseQuietly(lease);
        if (identity != null) {
            withdrawQuietly(identity.id());
        }
        LOG.info("telegram bot '{}': polling stopped{}", bot, lease == null ? "" : "; lease released for another process");
    }

    private void logStandby(long botId) throws SQLException {
        Optional<PollLease.Holder> current = leases.current(botId);
        if (current.isPresent() && !current.get().expired()) {
            LOG.info("telegram bot '{}': another process holds the poll lease ({}); standing by", bot, current.get().holder());
        } else {
            LOG.info("telegram bot '{}': this process holds its share of poll leases ({}); standing by for a process below"
                    + " its share, taking the lease itself if it stays free for {} s", bot, describe(share.counts()),
                    share.overflowAfter().toSeconds());
        }
    }

    private static String describe(LeaseShare.Counts counts) {
        return counts.held() + " held here, at most " + counts.share() + " each: " + counts.bots() + " bot(s), "
                + counts.processes() + " process(es)";
    }

    private void withdrawQuietly(long botId) {
        try {
            share.withdraw(botId);
        } catch (SQLException e) {
            LOG.warn("telegram bot '{}': could not withdraw from the poll candidates ({}); it stops counting after a lease period",
                    bot, e.getMessage());
        }
    }

    /**
     * A poller that keeps its lease while every poll fails loses updates as surely as one that is
     * not running: once its last success is older than Telegram's retention, the window is recorded
     * (and counted) at once, then extended on every later failure, not only at the next lease take.
     * The checkpoint's time is the window's start, the same one a later lease take would see.
     */
    private void watchForLoss(long botId, Instant lastSuccess) {
        if (lastSuccess == null || !LossWindow.missed(lastSuccess, clock.instant())) {
            return;
        }
        try {
            recordLossWindow(botId, checkpoints.find(botId).flatMap(OffsetCheckpoint.Saved::lastSuccessfulPoll));
        } catch (SQLException e) {
            // Never in the way of the next poll; the seconds-since-last-poll gauge tells the story meanwhile.
            LOG.warn("telegram bot '{}': the possible loss window could not be recorded yet ({}); tried again after the next failure",
                    bot, e.getMessage());
        }
    }

    private void recordLossWindow(long botId, Optional<Instant> lastSuccessfulPoll) throws SQLException {
        lossWindows.recordIfMissed(botId, lastSuccessfulPoll, clock.instant()).ifPresent(w -> {
            metrics.lossWindow();
            LOG.warn("telegram bot '{}': last successful poll was {} (more than 24 h ago): updates Telegram received before {}"
                    + " may have expired unseen; recorded as a possible loss window", bot, w.from(), w.to().minus(LossWindow.TELEGRAM_RETENTION));
        });
    }

    /** @return the batch, or null when the consumer was stopped during the long poll */
    private List<BotApiClient.RawUpdate> longPoll(long offset) throws BotApiException {
        if (offset < 0) {
            // A negative offset makes Telegram forget queued updates: never send one.
            throw new IllegalStateException("refusing to poll with negative offset " + offset);
        }
        synchronized (phase) {
            if (!running) {
                return null;
            }
            inLongPoll = true;
        }
        long started = System.nanoTime();
        try {
            return client.getUpdates(offset, endpoint.getLimit(), endpoint.getTimeout(), endpoint.allowedUpdateList());
        } catch (BotApiException e) {
            if (!running) {
                // Interrupted here, the request may still wait at Telegram until its timeout.
                abandonedPollUntil = started + Duration.ofSeconds(endpoint.getTimeout() + 1L).toNanos();
                return null;
            }
            throw e;
        } finally {
            synchronized (phase) {
                inLongPoll = false;
                Thread.interrupted();
            }
        }
    }

    /** Whatever a crash left unscheduled is scheduled first, and from here on each batch the moment it is stored. */
    private void scheduleFromStorage(PollLease.Held lease) {
        if (scheduler != null && scheduler.botId() != lease.botId()) {
            scheduler.stop();
            scheduler = null;
        }
        if (scheduler == null) {
            scheduler = new UpdateScheduler(bot, lease.botId(), scheduleCheckpoints, this::wakeDispatcher,
                    endpoint.getComponent().scheduling());
        }
        scheduler.catchUp(lease);
    }

    private void wakeDispatcher() {
        WorkDispatcher dispatcher = WorkDispatcher.of(getEndpoint().getCamelContext());
        if (dispatcher != null) {
            dispatcher.nudge();
        }
    }

    /**
     * With a work dispatcher (the runner has one) the stored updates are its work, woken by the
     * {@link UpdateScheduler} once they are scheduled, and runs them from storage, recording each
     * outcome and retrying failures. Without one (the component on its own) the route runs on its own thread,
     * so slow handlers never hold up polling (and with it the confirmation of the next batch);
     * batches it cannot take are left in the inbox.
     */
    private void handOff(BotApiClient.BotIdentity identity, List<TelegramInbox.StoredUpdate> stored, boolean fullBatch) {
        WorkDispatcher dispatcher = WorkDispatcher.of(getEndpoint().getCamelContext());
        if (dispatcher != null && dispatcher.handles(TelegramWorkSource.KIND)) {
            if (fullBatch) {
                // Telegram holds more for this bot: taking it in comes before handling what is stored.
                dispatcher.intakeBehind();
            }
            return;
        }
        try {
            handoff.execute(() -> emit(identity, stored));
        } catch (RejectedExecutionException e) {
            LOG.debug("telegram bot '{}': handlers are behind; {} stored update(s) left in the inbox", bot, stored.size());
        }
    }

    private void emit(BotApiClient.BotIdentity identity, List<TelegramInbox.StoredUpdate> stored) {
        for (TelegramInbox.StoredUpdate update : stored) {
            Exchange exchange = exchangeFor(identity, update);
            exchange.getMessage().setHeader(WorkDispatcher.IDEMPOTENCY_KEY, update.idempotencyKey());
            try {
                runRoute(exchange);
            } catch (Exception e) {
                exchange.setException(e);
            }
            releaseExchange(exchange, false);
        }
    }

    private Exchange exchangeFor(BotApiClient.BotIdentity identity, TelegramInbox.StoredUpdate update) {
        Exchange exchange = createExchange(false);
        TelegramUpdateMessage.fill(exchange.getMessage(), bot, identity.id(), update.updateId(), update.type(), update.rowId(),
                update.json(), update.rawReason());
        return exchange;
    }

    /** Updates stored raw are confirmed and handed on like the others; a person may want to know they came. */
    private void reportRaw(List<TelegramInbox.StoredUpdate> stored) {
        for (TelegramInbox.StoredUpdate update : stored) {
            if (update.rawReason() != null) {
                metrics.raw();
                LOG.warn("telegram bot '{}': update {} cannot be stored as jsonb ({}); stored raw as inbox row {}, confirmed and"
                        + " handed on with header {}", bot, update.updateId(), update.rawReason(), update.rowId(), TelegramInboxConstants.RAW_REASON);
            }
        }
    }

    private void runRoute(Exchange exchange) throws Exception {
        getProcessor().process(exchange);
        if (exchange.getException() != null) {
            LOG.warn("telegram bot '{}': route failed for update {} ({}); it stays stored as inbox row {} and is retried from there",
                    bot, exchange.getMessage().getHeader(TelegramInboxConstants.UPDATE_ID), exchange.getException().getMessage(),
                    exchange.getMessage().getHeader(TelegramInboxConstants.INBOX_ROW_ID));
        }
    }

    private PollLease.Held releaseQuietly(PollLease.Held lease) {
        if (lease != null) {
            share.held(-1);
            try {
                // The next holder polls only once a getUpdates given up on by a stop has ended at Telegram.
                leases.release(lease, Duration.ofNanos(Math.max(0, abandonedPollUntil - System.nanoTime())));
            } catch (SQLException e) {
                LOG.warn("telegram bot '{}': could not release the poll lease ({}); it expires on its own", bot, e.getMessage());
            }
        }
        return null;
    }

    private void pause(Duration duration) {
        synchronized (phase) {
            if (running) {
                try {
                    phase.wait(Math.max(1, duration.toMillis()));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    private static Duration standbyInterval(Duration leaseDuration) {
        return Duration.ofMillis(Math.min(2000, leaseDuration.toMillis() / 4));
    }
}
