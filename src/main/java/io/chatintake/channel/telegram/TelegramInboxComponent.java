package io.chatintake.channel.telegram;

import io.chatintake.message.ChildMessageListener;
import io.chatintake.store.OperatorPause;
import java.net.http.HttpClient;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;
import javax.sql.DataSource;
import org.apache.camel.Endpoint;
import org.apache.camel.builder.ThreadPoolProfileBuilder;
import org.apache.camel.spi.ExecutorServiceManager;
import org.apache.camel.spi.ThreadPoolProfile;
import org.apache.camel.support.CamelContextHelper;
import org.apache.camel.spi.annotations.Component;
import org.apache.camel.support.HealthCheckComponent;

/**
 * {@code telegram-inbox:<bot name>}: durable Telegram Bot API long polling. Unlike camel-telegram's
 * consumer (offset in memory, advanced even when the exchange failed, unknown update types dropped)
 * this one commits every batch and the next offset to PostgreSQL before it polls again. Each
 * consumer's health check (what its poller is doing) is shown unless healthCheckConsumerEnabled=false.
 */
@Component("telegram-inbox")
public class TelegramInboxComponent extends HealthCheckComponent {
    /** A scheduling pass is one short transaction: two threads keep up with many bots. */
    private static final int SCHEDULING_THREADS = 2;
    /**
     * Steps of all bots at once: each is a few short transactions (and a getMe or getWebhookInfo
     * when taking a lease), so a few threads keep the commits of many bots going.
     */
    static final int POLLING_THREADS = 8;
    /** Route runs without a work dispatcher (the component on its own): a few at a time across all bots. */
    private static final int HANDOFF_THREADS = 4;
    private DataSource dataSource;
    private ChildMessageListener childMessageListener;
    private Clock clock = Clock.systemUTC();
    private final Map<String, LeaseShare> leaseShares = new ConcurrentHashMap<>();
    private HttpClient botApiHttp;
    private ScheduledExecutorService scheduling;
    private ScheduledExecutorService polling;
    private ExecutorService handoff;
    private OperatorPause.Watch pausedBots;

    @Override
    protected Endpoint createEndpoint(String uri, String remaining, Map<String, Object> parameters) throws Exception {
        if (remaining == null || remaining.isBlank()) {
            throw new IllegalArgumentException("telegram-inbox needs a bot name: telegram-inbox:main");
        }
        TelegramInboxEndpoint endpoint = new TelegramInboxEndpoint(uri, this, remaining);
        setProperties(endpoint, parameters);
        return endpoint;
    }

    /** The product's database, bound as {@code dataSource} by the runner. */
    public DataSource getDataSource() {
        if (dataSource == null) {
            dataSource = CamelContextHelper.lookup(getCamelContext(), "dataSource", DataSource.class);
            if (dataSource == null) {
                dataSource = CamelContextHelper.findSingleByType(getCamelContext(), DataSource.class);
            }
            if (dataSource == null) {
                throw new IllegalStateException("telegram-inbox needs a DataSource bound as 'dataSource'");
            }
        }
        return dataSource;
    }

    /** Told about album parts stored with a batch; bound as {@code childMessageListener} by the application. */
    public ChildMessageListener getChildMessageListener() {
        if (childMessageListener == null) {
            childMessageListener = CamelContextHelper.findSingleByType(getCamelContext(), ChildMessageListener.class);
            if (childMessageListener == null) {
                throw new IllegalStateException("telegram-inbox needs a ChildMessageListener bound (the application"
                        + " configuration binds 'childMessageListener'); without it album parts would not be scheduled");
            }
        }
        return childMessageListener;
    }

    public void setChildMessageListener(ChildMessageListener childMessageListener) {
        this.childMessageListener = childMessageListener;
    }

    public void setDataSource(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /** One HTTP client for every bot's long polls: one selector thread for all of them, not one per bot. */
    synchronized HttpClient botApiHttp() {
        if (botApiHttp == null) {
            botApiHttp = BotApiClient.newPollingHttpClient();
        }
        return botApiHttp;
    }

    /**
     * Where every bot's stored updates become work ({@link UpdateScheduler}): a few threads shared
     * by all bots, from Camel's executor service manager, which stops them with the component.
     */
    synchronized ScheduledExecutorService scheduling() {
        if (scheduling == null) {
            scheduling = getCamelContext().getExecutorServiceManager().newScheduledThreadPool(this, "TelegramInboxScheduling", SCHEDULING_THREADS);
        }
        return scheduling;
    }

    /**
     * Where every bot's {@link BotPoller} runs its steps (lease, store, confirm): a fixed few
     * threads whatever the number of bots, as no step waits for a long poll.
     */
    synchronized ScheduledExecutorService polling() {
        if (polling == null) {
            polling = getCamelContext().getExecutorServiceManager().newScheduledThreadPool(this, "TelegramInboxPolling", POLLING_THREADS);
        }
        return polling;
    }

    /**
     * Where stored batches run the route when no work dispatcher takes them ({@link HandoffQueue}):
     * a few threads every bot shares, none while idle.
     */
    synchronized ExecutorService handoff() {
        if (handoff == null) {
            ThreadPoolProfile profile = new ThreadPoolProfileBuilder("TelegramInboxHandoff").poolSize(HANDOFF_THREADS)
                    .maxPoolSize(HANDOFF_THREADS).allowCoreThreadTimeOut(true).keepAliveTime(60L).maxQueueSize(-1).build();
            handoff = getCamelContext().getExecutorServiceManager().newThreadPool(this, "TelegramInboxHandoff", profile);
        }
        return handoff;
    }

    @Override
    protected void doStop() throws Exception {
        ExecutorServiceManager executors = getCamelContext().getExecutorServiceManager();
        if (scheduling != null) {
            executors.shutdownGraceful(scheduling);
            scheduling = null;
        }
        if (polling != null) {
            // Each consumer stopped its poller before: nothing is left to run.
            executors.shutdownNow(polling);
            polling = null;
        }
        if (handoff != null) {
            executors.shutdownGraceful(handoff);
            handoff = null;
        }
        super.doStop();
    }

    /** The bots an operator paused, looked up once a second for all of this process's pollers together. */
    synchronized OperatorPause.Watch pausedBots() {
        if (pausedBots == null) {
            pausedBots = new OperatorPause.Watch(getDataSource(), OperatorPause.Subject.TELEGRAM_BOT);
        }
        return pausedBots;
    }

    /** One per process and lease duration, so that the bots' consumers count their leases together. */
    LeaseShare leaseShare(String holder, Duration lease) {
        return leaseShares.computeIfAbsent(holder + "/" + lease, k -> new LeaseShare(getDataSource(), holder, lease));
    }

    public Clock getClock() {
        return clock;
    }

    /** Tests replace the clock to cross Telegram's 24 h retention without waiting. */
    public void setClock(Clock clock) {
        this.clock = clock;
    }
}
