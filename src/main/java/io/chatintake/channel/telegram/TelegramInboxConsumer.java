package io.chatintake.channel.telegram;

import io.chatintake.channel.telegram.TelegramInboxConsumerHealthCheck.Phase;
import io.chatintake.config.Secret;
import io.chatintake.config.Settings;
import io.chatintake.support.FormerHeaderNames;
import io.chatintake.support.MeterRegistryLookup;
import io.chatintake.support.ProcessIdentity;
import io.chatintake.work.WorkConstants;
import io.chatintake.work.WorkDispatcher;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.sql.DataSource;
import org.apache.camel.Exchange;
import org.apache.camel.Processor;
import org.apache.camel.support.DefaultConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One bot's durable long polling in a route: its {@link BotPoller} runs its steps on the
 * component's shared polling pool, and what it stores goes on from storage. With a work dispatcher (the runner has
 * one) the {@link UpdateScheduler} turns stored updates into its work, and where a
 * {@code work:telegram-update} route runs in this process the route runs once per committed batch
 * (its {@code to: "work:telegram-update"} names that work); elsewhere (no such route here, or the
 * component on its own) each stored update runs the route on the component's shared hand-off pool, in order
 * per bot ({@link HandoffQueue}), so slow handlers never hold up polling.
 * What the route does cannot change what was stored or confirmed: a failing route leaves the
 * update in the inbox.
 * <p>
 * Its {@link TelegramInboxConsumerHealthCheck} says on {@code /observe/health} what the poller is doing.
 */
public class TelegramInboxConsumer extends DefaultConsumer implements BotPoller.StoredUpdatesListener {
    private static final Logger LOG = LoggerFactory.getLogger(TelegramInboxConsumer.class);
    private static final Duration STOP_WAIT = Duration.ofSeconds(60);

    private final TelegramInboxEndpoint endpoint;
    private final String bot;
    private final BacklogAtTelegram backlog = new BacklogAtTelegram();
    private TelegramInboxConsumerHealthCheck health;
    private ScheduleCheckpoint scheduleCheckpoints;
    private UpdateScheduler scheduler;
    private HandoffQueue handoff;
    private BotPoller poller;

    public TelegramInboxConsumer(TelegramInboxEndpoint endpoint, Processor processor) {
        super(endpoint, processor);
        this.endpoint = endpoint;
        this.bot = endpoint.getBotName();
    }

    @Override
    protected void doStart() throws Exception {
        super.doStart();
        TelegramInboxComponent component = endpoint.getComponent();
        health = new TelegramInboxConsumerHealthCheck(bot, component.getClock());
        if (component.isHealthCheckConsumerEnabled()) {
            health.register(endpoint.getCamelContext());
        }
        String tokenVariable = Settings.envName(endpoint.tokenKey());
        Optional<Secret> token = endpoint.resolveToken();
        if (token.isEmpty()) {
            LOG.info("telegram bot '{}': no token configured ({}); polling is off", bot, tokenVariable);
            health.enter(Phase.OFF, "no token configured (" + tokenVariable + ")");
            return;
        }
        List<String> notRequested = AllowedUpdates.notRequested(endpoint.allowedUpdateList());
        if (!notRequested.isEmpty()) {
            LOG.warn("telegram bot '{}': asking Telegram only for update types {} ({}); these are never received: {}", bot,
                    endpoint.allowedUpdateList(), Settings.envName(AllowedUpdates.KEY), notRequested);
        }
        DataSource dataSource = component.getDataSource();
        String holder = ProcessIdentity.name();
        BotApiClient client = new BotApiClient(endpoint.resolveApiUrl(), token.get(), component.botApiHttp());
        TelegramMetrics metrics = new TelegramMetrics(MeterRegistryLookup.of(endpoint.getCamelContext()), bot, component.getClock());
        scheduleCheckpoints = new ScheduleCheckpoint(dataSource, component.getChildMessageListener());
        handoff = new HandoffQueue(bot, component.handoff());
        poller = new BotPoller(new BotPoller.Parts(bot, tokenVariable, client, new PollLease(dataSource),
                component.leaseShare(holder, endpoint.leaseDuration()), new OffsetCheckpoint(dataSource),
                new TelegramUpdateStore(dataSource, component.getChildMessageListener()), new LossWindow(dataSource), metrics, health,
                component.getClock(), holder, component.pausedBots()), endpoint, this, component.polling());
        poller.start();
    }

    @Override
    protected void doStop() throws Exception {
        if (poller != null) {
            poller.stop();
            try {
                poller.stopped().get(STOP_WAIT.toMillis(), TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                LOG.warn("telegram bot '{}': the poller did not stop within {} s; its lease expires on its own", bot, STOP_WAIT.toSeconds());
            }
            poller = null;
        }
        if (scheduler != null) {
            scheduler.stop();
            scheduler = null;
        }
        if (handoff != null) {
            // Stored updates not handed over yet are not lost: the work dispatcher runs them.
            handoff.close();
            handoff = null;
        }
        if (health != null) {
            health.unregister(endpoint.getCamelContext());
            health = null;
        }
        super.doStop();
    }

    /** Whatever a crash left unscheduled is scheduled first, and from here on each batch the moment it is stored. */
    @Override
    public void leaseTaken(PollLease.Held lease) {
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

    /** Rows a lost commit answer stored are read back: the retried batch finds them stored and hands none over. */
    @Override
    public void storeUncertain(PollLease.Held lease) {
        if (scheduler != null && scheduler.botId() == lease.botId()) {
            scheduler.catchUp(lease);
        }
    }

    @Override
    public void stored(BotApiClient.BotIdentity identity, TelegramUpdateStore.StoredBatch batch, boolean fullBatch, boolean answerQueued) {
        if (batch.lastRowId() > 0) {
            scheduler.follow(batch);
        }
        WorkDispatcher dispatcher = WorkDispatcher.of(getEndpoint().getCamelContext());
        if (dispatcher != null && dispatcher.kinds().contains(TelegramWorkSource.KIND)) {
            if (backlog.afterPoll(fullBatch)) {
                // Taking in what Telegram holds for this bot comes before handling what is stored.
                dispatcher.backlogAtSource();
            } else if (answerQueued) {
                // Answers queue for threads to store them, as webhook deliveries queue for a transaction.
                dispatcher.intakeBehind();
            }
            if (!batch.stored().isEmpty()) {
                queued(batch.stored().size());
            }
            return;
        }
        if (!handoff.offer(() -> emit(identity, batch.stored()))) {
            LOG.debug("telegram bot '{}': handlers are behind; {} stored update(s) left in the inbox", bot, batch.stored().size());
        }
    }

    /**
     * Runs the route once for a committed batch, its updates queued as work of kind
     * {@code telegram-update}: its last step, {@code to: "work:telegram-update"}, says so and wakes
     * their handlers. Body: how many updates the batch stored.
     */
    private void queued(int stored) {
        Exchange exchange = createExchange(false);
        exchange.getMessage().setBody(stored);
        exchange.getMessage().setHeader(TelegramInboxConstants.BOT_NAME, bot);
        exchange.getMessage().setHeader(WorkDispatcher.WORK_KIND, TelegramWorkSource.KIND);
        FormerHeaderNames.copy(exchange.getMessage(), TelegramInboxConstants.FORMER_NAMES);
        FormerHeaderNames.copy(exchange.getMessage(), WorkConstants.FORMER_NAMES);
        try {
            getProcessor().process(exchange);
        } catch (Exception e) {
            exchange.setException(e);
        }
        if (exchange.getException() != null) {
            LOG.warn("telegram bot '{}': route failed after a batch of {} update(s) was stored and queued ({}); they run as work all"
                    + " the same", bot, stored, exchange.getException().getMessage());
        }
        releaseExchange(exchange, false);
    }

    private void wakeDispatcher() {
        WorkDispatcher dispatcher = WorkDispatcher.of(getEndpoint().getCamelContext());
        if (dispatcher != null && dispatcher.kinds().contains(TelegramWorkSource.KIND)) {
            dispatcher.nudge();
        }
    }

    private void emit(BotApiClient.BotIdentity identity, List<TelegramUpdateStore.StoredUpdate> stored) {
        for (TelegramUpdateStore.StoredUpdate update : stored) {
            Exchange exchange = createExchange(false);
            TelegramUpdateMessage.fill(exchange.getMessage(), bot, identity.id(), update.updateId(), update.type(), update.rowId(),
                    update.json(), update.rawReason());
            exchange.getMessage().setHeader(WorkDispatcher.IDEMPOTENCY_KEY, update.idempotencyKey());
            exchange.getMessage().setHeader(WorkDispatcher.WORK_KIND, TelegramWorkSource.KIND);
            FormerHeaderNames.copy(exchange.getMessage(), WorkConstants.FORMER_NAMES);
            try {
                runRoute(exchange);
            } catch (Exception e) {
                exchange.setException(e);
            }
            releaseExchange(exchange, false);
        }
    }

    private void runRoute(Exchange exchange) throws Exception {
        getProcessor().process(exchange);
        if (exchange.getException() != null) {
            LOG.warn("telegram bot '{}': route failed for update {} ({}); it stays stored as inbox row {} and is retried from there",
                    bot, exchange.getMessage().getHeader(TelegramInboxConstants.UPDATE_ID), exchange.getException().getMessage(),
                    exchange.getMessage().getHeader(TelegramInboxConstants.STORED_ID));
        }
    }
}
