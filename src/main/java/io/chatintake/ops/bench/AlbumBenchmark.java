package io.chatintake.ops.bench;

import io.chatintake.album.AlbumAggregateController;
import io.chatintake.album.AlbumAggregation;
import io.chatintake.album.AlbumAggregationRepository;
import io.chatintake.album.AlbumChildSource;
import io.chatintake.album.AlbumDeadlineSweep;
import io.chatintake.album.AlbumDecisionSource;
import io.chatintake.album.AlbumDecisions;
import io.chatintake.album.QuietPeriods;
import io.chatintake.channel.ChildMessages;
import io.chatintake.config.Settings;
import io.chatintake.message.ChannelMessage;
import io.chatintake.message.ChannelMessageStore;
import io.chatintake.message.ChildMessageListener;
import io.chatintake.store.PlannedEachTime;
import io.chatintake.work.WorkDispatcher;
import io.chatintake.work.WorkQueue;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.apache.camel.CamelContext;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.PluginHelper;
import org.apache.camel.support.ResourceHelper;

/**
 * {@code bench albums [N]}: decision latency with N albums open at once (default 20,000). Albums
 * of two children without a total (so only their deadline decides them) are stored as channels
 * store children, at N per quiet period, so that N are open when the first deadlines pass;
 * the product's routes/albums.yaml (each child into its aggregation group through the work dispatcher, the deadline
 * sweep on a timer) decide them on a fresh durable database (fsync on). An observer sees each decision committed and measures how
 * late it is against its deadline (last child + quiet period).
 * <p>
 * Target: p99 lateness <= 250 ms with N open, and heap after GC at the peak <= 1.2x that before
 * intake (the groups are in the database; the Aggregator keeps one completion timeout per open
 * album in the memory of the runner that aggregated it). There is no contender: the bound is absolute.
 */
public final class AlbumBenchmark {
    private static final Duration QUIET = Duration.ofSeconds(20);
    private static final Path ROUTES = Path.of("routes/albums.yaml");
    private static final long TARGET_LATE_MILLIS = 250;
    private static final double TARGET_HEAP_RATIO = 1.2;
    private static final int ALBUMS_PER_COMMIT = 50;
    /** Albums decided and handled before the measured ones, at the same rate (N per quiet period). */
    private static final int WARM_UP_ALBUMS = 2_000;
    private static final Duration WARM_UP_QUIET = Duration.ofSeconds(2);

    private final PrintStream out;

    public AlbumBenchmark(PrintStream out) {
        this.out = out;
    }

    /** @return 0 when the targets are met */
    public int run(int albums) throws Exception {
        try (BenchDatabase database = BenchDatabase.start("albums", 24)) {
            return measure(database.dataSource(), albums);
        }
    }

    private int measure(DataSource dataSource, int albums) throws Exception {
        // The sweep as shipped: config/application.properties (and its environment override) when run from the repository.
        Path config = Path.of("config/application.properties");
        long sweepMillis = (Files.isRegularFile(config) ? Settings.load(config, System.getenv()) : Settings.of(Map.of()))
                .getLong("albums.sweep-interval-millis");
        CamelContext camel = new DefaultCamelContext();
        Properties properties = new Properties();
        properties.setProperty("albums.quiet-period-seconds", Long.toString(QUIET.toSeconds()));
        properties.setProperty("albums.telegram-quiet-period-seconds", Long.toString(QUIET.toSeconds()));
        properties.setProperty("albums.sweep-interval-millis", Long.toString(sweepMillis));
        camel.getPropertiesComponent().setInitialProperties(properties);
        AlbumDecisions decisions = new AlbumDecisions(dataSource);
        AlbumAggregateController controller = new AlbumAggregateController();
        camel.getRegistry().bind("albumDecisions", decisions);
        camel.getRegistry().bind("albumAggregation", new AlbumAggregation());
        camel.getRegistry().bind("albumRecorders", AlbumDecisions.recorders());
        camel.getRegistry().bind("albumAggregateController", controller);
        AlbumAggregationRepository repository = new AlbumAggregationRepository(dataSource, controller);
        camel.getRegistry().bind("albumAggregationRepository", repository);
        camel.getRegistry().bind("albumDeadlineSweep", new AlbumDeadlineSweep(repository, controller));
        // the product's route file as shipped (aggregator and sweep), and a handler that takes decisions as they come
        PluginHelper.getRoutesLoader(camel).loadRoutes(ResourceHelper.resolveMandatoryResource(camel, "file:" + ROUTES));
        camel.addRoutes(new RouteBuilder() {
            @Override
            public void configure() {
                from("work:album-decision").routeId("album-decision").log(org.apache.camel.LoggingLevel.DEBUG, "decided");
            }
        });
        WorkDispatcher dispatcher = new WorkDispatcher(camel, new WorkQueue(dataSource),
                List.of(new AlbumChildSource(), new AlbumDecisionSource()),
                WorkDispatcher.Options.from(Settings.of(Map.of("work.poll-interval-millis", "100"))));
        camel.getRegistry().bind("workDispatcher", dispatcher);
        camel.start();
        dispatcher.start();
        Thread watching = null;
        Observer observer = null;
        try {
            long warmedUpTo = warmUp(dataSource);
            observer = new Observer(dataSource, albums, warmedUpTo);
            watching = new Thread(observer, "bench-album-observer");
            long heapBefore = heapAfterGc();
            watching.start();
            double intakeRate = intake(dataSource, albums, QUIET, "c");
            long heapPeak = heapAfterGc();
            // Counted again right after the last commit: the observer samples every 500 ms and,
            // with a small N (a commit every few seconds), had not yet seen the last one.
            int openAtPeak = (int) Math.max(observer.peakOpen, count(dataSource, OPEN));
            watching.join(QUIET.plusMinutes(5).toMillis());
            observer.stop = true;
            watching.join();
            long[] late = observer.lateMillis();
            Arrays.sort(late);
            long p50 = percentile(late, 0.50);
            long p99 = percentile(late, 0.99);
            double heapRatio = (double) heapPeak / heapBefore;
            long claimP99 = claimLateP99(dataSource, warmedUpTo);
            out.printf("warm-up:   %d albums (quiet period %d s) stored, decided and handled first, not measured: the code has run,"
                    + " as in a runner that has been up%n", WARM_UP_ALBUMS, WARM_UP_QUIET.toSeconds());
            out.printf("intake:    %d albums (%d children) stored at %.0f children/s (paced to N per quiet period of %d s, %d albums a commit)%n",
                    albums, albums * 2, intakeRate, QUIET.toSeconds(), ALBUMS_PER_COMMIT);
            out.printf("open:      %d albums open at the peak (the load holds when >= %d, 90 %% of N), %d groups in the aggregator's"
                    + " repository%n", openAtPeak, (int) Math.ceil(albums * 0.9), observer.peakGroups);
            out.printf("decisions: %d of %d seen; lateness after the deadline p50 %d ms, p99 %d ms, max %d ms%n",
                    late.length, albums, p50, p99, late.length == 0 ? 0 : late[late.length - 1]);
            out.printf("           of which before the deciding transaction began: p99 %d ms%n", claimP99);
            out.printf("latency:   p99 %d ms = quiet period + %d ms (target <= quiet period + %d ms): ratio %.2f%n",
                    QUIET.toMillis() + p99, p99, TARGET_LATE_MILLIS, (double) p99 / TARGET_LATE_MILLIS);
            out.printf("heap:      %d MB before intake, %d MB after GC with the albums open: ratio %.2f (target <= %.1f)%n",
                    heapBefore >> 20, heapPeak >> 20, heapRatio, TARGET_HEAP_RATIO);
            boolean met = late.length == albums && p99 <= TARGET_LATE_MILLIS && heapRatio <= TARGET_HEAP_RATIO
                    && openAtPeak >= albums * 0.9;
            out.println(met ? "target met" : "target NOT met");
            return met ? 0 : 1;
        } finally {
            if (observer != null) {
                observer.stop = true;
            }
            dispatcher.stop();
            camel.stop();
        }
    }

    /**
     * Runs {@link #WARM_UP_ALBUMS} albums through intake, the sweep and the decision handler: the
     * first deadlines of a runner that had decided nothing yet came 0.1-0.6 s late while its code
     * was loaded and compiled.
     * @return the last decision id of the warm-up: the measured decisions come after it
     */
    private static long warmUp(DataSource dataSource) throws Exception {
        intake(dataSource, WARM_UP_ALBUMS, WARM_UP_QUIET, "warm-up-");
        // stored at the warm-up's pace, decided at the route's quiet period
        long deadline = System.nanoTime() + QUIET.plusSeconds(60).toNanos();
        while (count(dataSource, "SELECT count(*) FROM album_decision") < WARM_UP_ALBUMS
                || count(dataSource, "SELECT count(*) FROM work_item WHERE state <> 'done'") > 0) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("warm-up: its albums were not decided and handled within a minute after their deadlines");
            }
            Thread.sleep(100);
        }
        return count(dataSource, "SELECT max(id) FROM album_decision");
    }

    private static long count(DataSource dataSource, String sql) throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = PlannedEachTime.prepare(c, sql); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /**
     * Stores album i's two children at (i / N) of the quiet period, a batch of albums per
     * transaction (as a Telegram page arrives), through the same child store and listener as
     * every channel: the album rows, their deadlines and the child work are written with them.
     * Conversation and album ids start with {@code prefix}.
     */
    private static double intake(DataSource dataSource, int albums, Duration quiet, String prefix) throws Exception {
        ChildMessageListener listener = ChildMessages.listener(new QuietPeriods(quiet, quiet));
        long start = System.nanoTime();
        double perAlbumNanos = (double) quiet.toNanos() / albums;
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            for (int first = 0; first < albums; first += ALBUMS_PER_COMMIT) {
                long wait = start + (long) (first * perAlbumNanos) - System.nanoTime();
                if (wait > 0) {
                    TimeUnit.NANOSECONDS.sleep(wait);
                }
                List<ChannelMessageStore.MessageEvent> children = new ArrayList<>();
                for (int i = first; i < Math.min(albums, first + ALBUMS_PER_COMMIT); i++) {
                    for (int child = 1; child <= 2; child++) {
                        ChannelMessage message = new ChannelMessage("whatsapp", "acc", prefix + i, prefix + "m" + i + "-" + child, "image",
                                null, null, null, null, prefix + "a" + i, child, null);
                        children.add(new ChannelMessageStore.MessageEvent(prefix + "e" + i + "-" + child, Instant.now(), message,
                                ChannelMessage.Change.CONTENT));
                    }
                }
                listener.stored(c, ChannelMessageStore.applyAll(c, "bench", children).stream().map(applied -> ChildMessageListener.StoredChild.of(applied, null)).toList());
                c.commit();
            }
        }
        return albums * 2 / ((System.nanoTime() - start) / 1e9);
    }

    /** How late the deciding transactions began (decided_at is their start): the rest is deciding and committing. */
    private static long claimLateP99(DataSource dataSource, long warmedUpTo) throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement("""
                SELECT percentile_disc(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM d.decided_at - a.last_child_at) * 1000)
                  FROM album_decision d JOIN album a USING (album_key) WHERE d.id > ?""")) {
            ps.setLong(1, warmedUpTo);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1) - QUIET.toMillis();
            }
        }
    }

    private static final String OPEN = "SELECT count(*) FROM album WHERE decide_after IS NOT NULL";
    private static final String GROUPS = "SELECT count(*) FROM " + AlbumAggregationRepository.NAME;

    private static long heapAfterGc() throws IOException {
        return BenchRunner.heapLeftByCollection(ManagementFactory.getPlatformMBeanServer());
    }

    private static long percentile(long[] sorted, double p) {
        return sorted.length == 0 ? Long.MAX_VALUE : sorted[Math.min(sorted.length - 1, (int) Math.ceil(p * sorted.length) - 1)];
    }

    /** Sees decisions once committed (every 20 ms) and how late each is; samples the open albums. */
    private static final class Observer implements Runnable {
        private final DataSource dataSource;
        private final long[] late;
        private final long warmedUpTo;
        private int seen;
        private volatile int peakOpen;
        private volatile int peakGroups;
        private volatile boolean stop;

        Observer(DataSource dataSource, int albums, long warmedUpTo) {
            this.dataSource = dataSource;
            this.late = new long[albums];
            this.warmedUpTo = warmedUpTo;
        }

        @Override
        public void run() {
            // Decisions are committed by several threads (the sweep, the aggregator's timeouts and completions), so ids
            // commit out of order: every id at or below the floor has been seen, those above it are looked at again.
            long floor = warmedUpTo;
            BitSet seenIds = new BitSet();
            long nextOpenSample = 0;
            // Planned at each look, each new decision's album found by its key: plans made for the whole join hashed all
            // albums (or, kept from the empty tables of the start, all decisions too) 50 times a second, on the database
            // whose decisions it times.
            try (Connection c = dataSource.getConnection();
                 PreparedStatement decided = PlannedEachTime.prepare(c, "SELECT d.id, (SELECT (extract(epoch FROM a.last_child_at) * 1000)::bigint"
                         + " FROM album a WHERE a.album_key = d.album_key) FROM album_decision d WHERE d.id > ? ORDER BY d.id");
                 PreparedStatement open = PlannedEachTime.prepare(c, OPEN);
                 PreparedStatement groups = PlannedEachTime.prepare(c, GROUPS)) {
                while (!stop && seen < late.length) {
                    decided.setLong(1, floor);
                    long now = System.currentTimeMillis();
                    try (ResultSet rs = decided.executeQuery()) {
                        while (rs.next() && seen < late.length) {
                            int id = (int) (rs.getLong(1) - warmedUpTo);
                            if (!seenIds.get(id)) {
                                seenIds.set(id);
                                late[seen++] = now - (rs.getLong(2) + QUIET.toMillis());
                            }
                        }
                    }
                    while (seenIds.get((int) (floor + 1 - warmedUpTo))) {
                        floor++;
                    }
                    if (now >= nextOpenSample) {
                        try (ResultSet rs = open.executeQuery()) {
                            rs.next();
                            peakOpen = Math.max(peakOpen, rs.getInt(1));
                        }
                        try (ResultSet rs = groups.executeQuery()) {
                            rs.next();
                            peakGroups = Math.max(peakGroups, rs.getInt(1));
                        }
                        nextOpenSample = now + 500;
                    }
                    Thread.sleep(20);
                }
            } catch (SQLException e) {
                throw new IllegalStateException("observer: " + e.getMessage(), e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        long[] lateMillis() {
            return Arrays.copyOf(late, seen);
        }
    }
}
