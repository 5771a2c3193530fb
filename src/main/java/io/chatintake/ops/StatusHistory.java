package io.chatintake.ops;

import io.chatintake.config.Settings;
import io.chatintake.support.MeterRegistryLookup;
import io.chatintake.work.RunnerHeartbeat;
import io.chatintake.work.WorkDispatcher;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Measurement;
import io.micrometer.core.instrument.Statistic;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.apache.camel.CamelContext;
import org.apache.camel.CamelContextAware;
import org.apache.camel.support.service.ServiceSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The history behind the status page's graphs ({@code status_rollup}): every
 * {@link #SAMPLE_EVERY} this process reads its own Micrometer counters and adds what they counted
 * since the last sample to the current minute and hour by the database's clock, shared by every
 * process, whatever its own clock says; once a minute it
 * also records the backlog and the oldest due item's age as the database has them. The engine
 * knows nothing of this: a counter any part of the product registers under one of the names in
 * {@link #COUNTERS} is graphed.
 * <p>
 * Once a minute it also applies the history's retention: minute rows after {@link #MINUTES_KEPT}, hour rows
 * after {@code retention.status-history-days}, operator actions after
 * {@code retention.operator-action-days}, and the heartbeat rows of processes dead for
 * {@code retention.dead-process-minutes}.
 */
public final class StatusHistory extends ServiceSupport implements CamelContextAware {
    private static final Logger LOG = LoggerFactory.getLogger(StatusHistory.class);
    static final Duration SAMPLE_EVERY = Duration.ofSeconds(10);
    static final Duration MINUTES_KEPT = Duration.ofHours(2);
    public static final String HISTORY_DAYS = "retention.status-history-days";
    public static final String ACTION_DAYS = "retention.operator-action-days";
    public static final String DEAD_PROCESS_MINUTES = "retention.dead-process-minutes";

    /** One graphed counter: the meter's name (dots read as underscores), the tag values it must have, and whose it is. */
    private record Counted(String series, String meter, Map<String, String> where, String subjectTag, String subjectPrefix) {
        Optional<String> subjectOf(Meter m) {
            for (Map.Entry<String, String> condition : where.entrySet()) {
                if (!condition.getValue().equals(m.getId().getTag(condition.getKey()))) {
                    return Optional.empty();
                }
            }
            if (subjectTag.equals("channel")) {
                return Optional.of(m.getId().getTag("channel") + "/" + m.getId().getTag("workspace"));
            }
            String subject = m.getId().getTag(subjectTag);
            return Optional.ofNullable(subject).map(s -> subjectPrefix + s);
        }
    }

    static final String STORED = "stored";
    static final String DONE = "done";
    static final String FAILED = "failed";
    static final String PARKED = "parked";
    static final String SENT = "replies sent";
    static final String DEFERRED = "deferred by limits";
    static final String RATE_LIMITED = "429s";
    static final String BACKLOG = "backlog";
    static final String OLDEST_DUE = "oldest due (s)";

    private static final List<Counted> COUNTERS = List.of(
            new Counted(STORED, "chat_intake_telegram_updates_stored", Map.of(), "bot", "bot "),
            new Counted(STORED, "chat_intake_webhook_deliveries", Map.of("outcome", "stored"), "channel", ""),
            new Counted(DONE, "chat_intake_work_handler_seconds", Map.of("outcome", "done"), "kind", "work "),
            new Counted(FAILED, "chat_intake_work_handler_seconds", Map.of("outcome", "failed"), "kind", "work "),
            new Counted(PARKED, "chat_intake_work_handler_seconds", Map.of("outcome", "parked"), "kind", "work "),
            new Counted(SENT, "chat_intake_telegram_sends", Map.of("result", "sent"), "bot", "bot "),
            new Counted(RATE_LIMITED, "chat_intake_telegram_sends", Map.of("result", "rate_limited"), "bot", "bot "),
            new Counted(DEFERRED, "chat_intake_work_deferrals", Map.of(), "kind", "work "));

    private static final String ADD = """
            INSERT INTO status_rollup (resolution, series, subject, bucket, value)
            VALUES ('minute', ?, ?, date_trunc('minute', now()), ?), ('hour', ?, ?, date_trunc('hour', now()), ?)
            ON CONFLICT (resolution, series, subject, bucket) DO UPDATE SET value = status_rollup.value + excluded.value""";

    /** A gauge's minute is its latest value; its hour, the highest minute. */
    private static final String SET = """
            INSERT INTO status_rollup (resolution, series, subject, bucket, value)
            VALUES ('minute', ?, ?, date_trunc('minute', now()), ?), ('hour', ?, ?, date_trunc('hour', now()), ?)
            ON CONFLICT (resolution, series, subject, bucket) DO UPDATE SET value = CASE WHEN status_rollup.resolution = 'minute'
                THEN excluded.value ELSE greatest(status_rollup.value, excluded.value) END""";

    /** Unfinished work by kind, bounded by what is unfinished (never by history). */
    private static final String BACKLOG_NOW = """
            SELECT kind, count(*),
                   coalesce(extract(epoch FROM now() - min(next_attempt_at)
                            FILTER (WHERE state IN ('pending', 'failed') AND next_attempt_at <= now())), 0)
              FROM work_item WHERE state IN ('pending', 'failed', 'running', 'parked') GROUP BY kind""";

    private final DataSource dataSource;
    private volatile boolean failing;
    private final Duration historyKept;
    private final Duration actionsKept;
    private final Duration deadProcessKept;
    private final Duration deadAfter;
    private final Map<String, Double> lastTotals = new HashMap<>();
    private long lastMinute = -1;
    private CamelContext context;
    private ScheduledExecutorService timer;

    public StatusHistory(Settings settings, DataSource dataSource) {
        this.dataSource = dataSource;
        this.historyKept = Duration.ofDays(settings.getInt(HISTORY_DAYS));
        this.actionsKept = Duration.ofDays(settings.getInt(ACTION_DAYS));
        this.deadProcessKept = Duration.ofMinutes(settings.getLong(DEAD_PROCESS_MINUTES));
        this.deadAfter = deadAfter(settings);
    }

    /** How long a process may stay silent before it counts as dead, as the work dispatcher counts it. */
    static Duration deadAfter(Settings settings) {
        WorkDispatcher.Options work = WorkDispatcher.Options.from(settings);
        return work.heartbeat().multipliedBy(work.deadAfterHeartbeats());
    }

    @Override
    public void setCamelContext(CamelContext camelContext) {
        this.context = camelContext;
    }

    @Override
    public CamelContext getCamelContext() {
        return context;
    }

    @Override
    protected void doStart() {
        LOG.info("status history: this process adds its counts to status_rollup every {} s (graphs of GET {})", SAMPLE_EVERY.toSeconds(),
                StatusPage.PATH);
        timer = context.getExecutorServiceManager().newSingleThreadScheduledExecutor(this, "status-history");
        timer.scheduleWithFixedDelay(this::sampleQuietly, SAMPLE_EVERY.toMillis(), SAMPLE_EVERY.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** The last counts go in before the process ends: a clean stop loses none. */
    @Override
    protected void doStop() {
        if (timer != null) {
            context.getExecutorServiceManager().shutdownGraceful(timer);
            timer = null;
        }
        sampleQuietly();
    }

    private void sampleQuietly() {
        try {
            sample(MeterRegistryLookup.of(context));
            failing = false;
        } catch (SQLException | RuntimeException e) {
            // Once per outage: a database away for an hour is one line, not one every sample.
            if (!failing) {
                LOG.warn("status history: sample not written ({}); the counts are kept and go in with the next one written",
                        e.getMessage());
            }
            failing = true;
        }
    }

    /** Adds what each counter counted since the last sample written; the totals move on only once written. */
    synchronized void sample(MeterRegistry registry) throws SQLException {
        Map<String, Double> totals = totals(registry);
        try (Connection c = dataSource.getConnection()) {
            try (PreparedStatement ps = c.prepareStatement(ADD)) {
                for (Map.Entry<String, Double> total : totals.entrySet()) {
                    double before = lastTotals.getOrDefault(total.getKey(), 0.0);
                    // A total below the last one is a meter registered anew: all of it is new.
                    double delta = total.getValue() >= before ? total.getValue() - before : total.getValue();
                    if (delta > 0) {
                        String[] key = total.getKey().split("\u0000", 2);
                        bind(ps, key[0], key[1], delta);
                        ps.addBatch();
                    }
                }
                ps.executeBatch();
            }
            lastTotals.putAll(totals);
            // Once a minute of the database's clock, whose minutes the buckets are: the gauges need no
            // finer grain, and their query reads every unfinished item.
            long minute = databaseMinute(c);
            if (minute != lastMinute) {
                recordBacklog(c);
                forget(c);
                lastMinute = minute;
            }
        }
    }

    private static long databaseMinute(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT floor(extract(epoch FROM now()) / 60)::bigint");
             ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private void recordBacklog(Connection c) throws SQLException {
        try (PreparedStatement read = c.prepareStatement(BACKLOG_NOW); ResultSet rs = read.executeQuery();
             PreparedStatement write = c.prepareStatement(SET)) {
            while (rs.next()) {
                bind(write, BACKLOG, "work " + rs.getString(1), rs.getLong(2));
                write.addBatch();
                bind(write, OLDEST_DUE, "work " + rs.getString(1), Math.round(rs.getDouble(3)));
                write.addBatch();
            }
            write.executeBatch();
        }
    }

    private void forget(Connection c) throws SQLException {
        execute(c, "DELETE FROM status_rollup WHERE resolution = 'minute' AND bucket < now() - make_interval(secs => ?)", MINUTES_KEPT);
        execute(c, "DELETE FROM status_rollup WHERE resolution = 'hour' AND bucket < now() - make_interval(secs => ?)", historyKept);
        execute(c, "DELETE FROM operator_action WHERE acted_at < now() - make_interval(secs => ?)", actionsKept);
        // Operator alerts (OperatorAlertLedger): findings over and announced, and messages sent, as long as actions.
        execute(c, "DELETE FROM operator_finding WHERE cleared_at < now() - make_interval(secs => ?) AND end_message_id IS NOT NULL",
                actionsKept);
        execute(c, "DELETE FROM operator_alert_message WHERE sent_at < now() - make_interval(secs => ?)", actionsKept);
        RunnerHeartbeat.forgetSilentFor(c, deadAfter.plus(deadProcessKept));
    }

    private static void execute(Connection c, String sql, Duration age) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setDouble(1, age.toSeconds());
            ps.executeUpdate();
        }
    }

    private static void bind(PreparedStatement ps, String series, String subject, double value) throws SQLException {
        ps.setString(1, series);
        ps.setString(2, subject);
        ps.setDouble(3, value);
        ps.setString(4, series);
        ps.setString(5, subject);
        ps.setDouble(6, value);
    }

    /** Each graphed counter's total now, by series and subject (joined by a NUL). */
    private static Map<String, Double> totals(MeterRegistry registry) {
        Map<String, Double> totals = new HashMap<>();
        for (Meter meter : registry.getMeters()) {
            String name = meter.getId().getName().replace('.', '_');
            for (Counted counted : COUNTERS) {
                if (counted.meter().equals(name)) {
                    counted.subjectOf(meter).ifPresent(subject -> totals.merge(counted.series() + "\u0000" + subject, count(meter), Double::sum));
                }
            }
        }
        return totals;
    }

    private static double count(Meter meter) {
        for (Measurement m : meter.measure()) {
            if (m.getStatistic() == Statistic.COUNT) {
                return m.getValue();
            }
        }
        return 0;
    }
}
