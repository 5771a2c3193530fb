package io.chatintake.ops.bench;

import io.chatintake.channel.ChildMessages;
import io.chatintake.channel.telegram.BotApiClient;
import io.chatintake.channel.telegram.OffsetCheckpoint;
import io.chatintake.channel.telegram.PollLease;
import io.chatintake.channel.telegram.ScheduleCheckpoint;
import io.chatintake.channel.telegram.TelegramUpdateStore;
import io.chatintake.channel.telegram.TelegramInboxConstants;
import io.chatintake.channel.telegram.TelegramWorkSource;
import io.chatintake.config.Secret;
import io.chatintake.config.Settings;
import io.chatintake.store.Database;
import io.chatintake.store.EmbeddedDatabase;
import io.chatintake.store.Migrations;
import io.chatintake.work.WorkDispatcher;
import io.chatintake.work.WorkQueue;
import io.chatintake.work.WorkRun;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.apache.camel.CamelContext;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.impl.DefaultCamelContext;

/**
 * {@code bench dispatch}: how fast stored, ordered Telegram work is handled, as a ratio to how fast
 * the same items are stored (the contender: intake's own storage transaction, 100 updates per
 * commit with their work items and the checkpoint, measured in the same run on the same durable
 * database). Handling runs the real dispatcher with its default options and the real work source
 * (each item's row is read back) into a handler route that only counts, so the figure is the
 * dispatcher's own cost. Targets: one chat with N queued >= 0.5x, 100 chats >= 0.8x, and the cost
 * of a claim with 100,000 queued <= 1.5x that with 1,000 (p50). {@code bench latency} ({@link #latency})
 * runs here too: the same database, handler route and inbox, measuring how long items wait instead.
 */
public final class DispatchBenchmark {
    private static final int BATCH = 100;
    private static final double ONE_CHAT_TARGET = 0.5;
    private static final double MANY_CHATS_TARGET = 0.8;
    private static final double CLAIM_GROWTH_TARGET = 1.5;
    private static final int CLAIM_SAMPLES = 400;
    private static final int CLAIM_RUN_SIZE = 10;
    private static final String CLAIM_KIND = "bench-claim";
    private static final Duration LEASE = Duration.ofMinutes(10);
    private static final int LATENCY_CHATS = 1_000;
    private static final int[] LATENCY_RATES = {1_000, 3_000};
    private static final String LATENCY_TEXT = "x".repeat(200);
    private static final String GROWING_TO = "80";
    private static final Duration TICK = Duration.ofMillis(10);
    /** Items stored in the first seconds are handled but not measured: the JIT and the wait settle first. */
    private static final Duration SETTLE = Duration.ofSeconds(5);
    private static final Duration DRAIN = Duration.ofMinutes(2);
    /** The stored-at time of an item whose commit is under way. */
    private static final long COMMITTING = Long.MIN_VALUE;

    private final PrintStream out;
    private final Map<String, Long> lastUpdatePerChat = new ConcurrentHashMap<>();
    private final AtomicLong handled = new AtomicLong();
    private final AtomicLong outOfOrder = new AtomicLong();
    private final Map<Long, Long> storedAt = new ConcurrentHashMap<>();
    private final List<Long> waits = new ArrayList<>();
    private long nextUpdateId = 1;

    public DispatchBenchmark(PrintStream out) {
        this.out = out;
    }

    /** @return 0 when every target is met and no item was lost, repeated or reordered */
    public int run(int items) throws Exception {
        return onFreshDatabase("dispatch", (database, camel) -> {
            WorkDispatcher.Options options = WorkDispatcher.Options.from(Settings.of(Map.of()));
            out.printf("dispatch bench: %d items of ~1 KB, durable embedded PostgreSQL, %d dispatcher threads, runs of up to %d%n",
                    items, options.concurrency(), options.runSize());
            Scenario one = scenario(database.dataSource(), camel, options, 9101, 1, items);
            Scenario many = scenario(database.dataSource(), camel, options, 9102, 100, items);
            double[][] claims = claimLatencies(database.embedded(), database.dataSource());
            double[] small = claims[0];
            double[] large = claims[1];
            double growth = small[0] == 0 ? Double.NaN : large[0] / small[0];
            boolean correct = outOfOrder.get() == 0 && one.allDone && many.allDone;

            out.printf("%-24s %12s %12s %7s %8s%n", "ordered work", "intake /s", "handled /s", "ratio", "target");
            one.print(out, "1 chat", ONE_CHAT_TARGET);
            many.print(out, "100 chats", MANY_CHATS_TARGET);
            out.printf("claim latency (run of %d, 100 chats): 1,000 queued p50 %.2f ms p99 %.2f ms; 100,000 queued p50 %.2f ms"
                    + " p99 %.2f ms; growth %.2fx (target <= %.1fx): %s%n", CLAIM_RUN_SIZE, small[0], small[1], large[0], large[1],
                    growth, CLAIM_GROWTH_TARGET, growth <= CLAIM_GROWTH_TARGET ? "met" : "NOT met");
            out.printf("order and completeness: %s%n", correct ? "every item done once, each chat in order"
                    : "BROKEN (" + outOfOrder.get() + " out of order)");
            boolean met = correct && one.ratio() >= ONE_CHAT_TARGET && many.ratio() >= MANY_CHATS_TARGET && growth <= CLAIM_GROWTH_TARGET;
            return met ? 0 : 1;
        });
    }

    /**
     * {@code bench latency [SECONDS]}: how long a stored item waits for its handler, from the
     * commit that stored it to the handler route, while updates of 1,000 chats are stored at a
     * steady rate (1,000 and 3,000 a second, 10 ms apart), with the shipped dispatcher settings
     * and with a gathering wait that may grow to 80 ms ({@code work.gather-max-millis=80}), in the
     * same run. No target: the figures show what a growing wait costs in latency, against what it
     * buys in throughput when the machine is saturated ({@code bench telegram}).
     * @return 0 when every item stored was handled
     */
    public int latency(int seconds) throws Exception {
        return onFreshDatabase("latency", (database, camel) -> {
            WorkDispatcher.Options shipped = WorkDispatcher.Options.from(Settings.of(Map.of()));
            WorkDispatcher.Options growing = WorkDispatcher.Options.from(Settings.of(Map.of("work.gather-max-millis", GROWING_TO)));
            out.printf("handling latency: commit -> handler, %d chats, %d s per rate (the first %d s not measured), durable embedded"
                    + " PostgreSQL; gathering as shipped (work.gather-millis %d, work.gather-max-millis %d) and growing to %s ms%n",
                    LATENCY_CHATS, seconds, SETTLE.toSeconds(), shipped.gather().toMillis(), shipped.gatherMax().toMillis(), GROWING_TO);
            boolean complete = true;
            long bot = 9300;
            for (int rate : LATENCY_RATES) {
                Waits asShipped = waits(database.dataSource(), camel, shipped, bot++, rate, seconds);
                Waits grown = waits(database.dataSource(), camel, growing, bot++, rate, seconds);
                out.printf("%,6d items/s  as shipped:         %s%n", rate, asShipped.describe());
                out.printf("%,6d items/s  growing to %3s ms:  %s  (p99 %.2fx)%n", rate, GROWING_TO, grown.describe(),
                        grown.p99() / asShipped.p99());
                complete &= asShipped.complete() && grown.complete();
            }
            out.printf("completeness: %s%n", complete ? "every stored item reached its handler" : "BROKEN: items were not handled");
            return complete ? 0 : 1;
        });
    }

    @FunctionalInterface
    private interface Bench {
        int run(BenchDatabase database, CamelContext camel) throws Exception;
    }

    /** A fresh durable database with the schema, and a handler route that notes each Telegram update handled. */
    private int onFreshDatabase(String name, Bench bench) throws Exception {
        try (BenchDatabase database = BenchDatabase.start(name, 16)) {
            CamelContext camel = new DefaultCamelContext();
            camel.addRoutes(new RouteBuilder() {
                @Override
                public void configure() {
                    from("work:telegram-update").routeId("bench-handler").autoStartup(false).process(e -> onHandled(
                            e.getMessage().getHeader(TelegramInboxConstants.BOT_ID, Long.class) + ":"
                                    + e.getMessage().getHeader(TelegramInboxConstants.CHAT_ID, String.class),
                            e.getMessage().getHeader(TelegramInboxConstants.UPDATE_ID, Long.class)));
                }
            });
            camel.start();
            try {
                return bench.run(database, camel);
            } finally {
                camel.stop();
            }
        }
    }

    private void onHandled(String chat, long updateId) {
        count(chat, updateId);
        Long at = storedAt.remove(updateId);
        if (at != null) {
            // Handled before the storing thread read the clock after its commit: no wait to speak of.
            long waited = at == COMMITTING ? 0 : System.nanoTime() - at;
            synchronized (waits) {
                waits.add(waited);
            }
        }
    }

    /** A bot's inbox as intake uses it, under the bot's poll lease: each batch stored, then scheduled as work. */
    private record BotInbox(TelegramUpdateStore inbox, ScheduleCheckpoint schedule, PollLease.Held lease) {
        static BotInbox open(DataSource dataSource, long bot) throws SQLException {
            new OffsetCheckpoint(dataSource).load(bot, "bench-" + bot);
            return new BotInbox(new TelegramUpdateStore(dataSource, ChildMessages.listener()),
                    new ScheduleCheckpoint(dataSource), new PollLease(dataSource).tryAcquire(bot, "bench", LEASE).orElseThrow());
        }

        void store(List<BotApiClient.RawUpdate> batch) throws Exception {
            schedule.scheduleThrough(lease.botId(), inbox.store(lease, LEASE, batch).lastRowId());
        }

        static BotApiClient.RawUpdate message(long updateId, long chatId, String text) {
            return new BotApiClient.RawUpdate(updateId, "message", "{\"update_id\":" + updateId + ",\"message\":{\"message_id\":" + updateId
                    + ",\"chat\":{\"id\":" + chatId + ",\"type\":\"private\"},\"date\":1,\"text\":\"" + text + "\"}}");
        }
    }

    private record Waits(long measured, long stored, double p50, double p99, double max) {
        boolean complete() {
            return measured == stored;
        }

        String describe() {
            return String.format("p50 %6.0f ms  p99 %6.0f ms  max %6.0f ms", p50, p99, max);
        }
    }

    /** Stores updates of 1,000 chats at {@code rate} for {@code seconds} with a dispatcher of these options running; how long items waited. */
    private Waits waits(DataSource dataSource, CamelContext camel, WorkDispatcher.Options options, long bot, int rate, int seconds)
            throws Exception {
        BotInbox inbox = BotInbox.open(dataSource, bot);
        synchronized (waits) {
            waits.clear();
        }
        storedAt.clear();
        WorkDispatcher dispatcher = startDispatcher(camel, dataSource, options);
        long measuredStored = 0;
        try {
            int perTick = (int) (rate * TICK.toMillis() / 1000);
            long start = System.nanoTime();
            long settled = start + SETTLE.toNanos();
            for (long tick = 0; tick < seconds * 1000L / TICK.toMillis(); tick++) {
                long wait = start + tick * TICK.toNanos() - System.nanoTime();
                if (wait > 0) {
                    TimeUnit.NANOSECONDS.sleep(wait);
                }
                List<BotApiClient.RawUpdate> batch = new ArrayList<>(perTick);
                for (int i = 0; i < perTick; i++, nextUpdateId++) {
                    batch.add(BotInbox.message(nextUpdateId, 1 + nextUpdateId % LATENCY_CHATS, LATENCY_TEXT));
                }
                boolean measured = System.nanoTime() >= settled;
                if (measured) {
                    batch.forEach(u -> storedAt.put(u.updateId(), COMMITTING));
                    measuredStored += batch.size();
                }
                inbox.store(batch);
                long committed = System.nanoTime();
                if (measured) {
                    batch.forEach(u -> storedAt.replace(u.updateId(), COMMITTING, committed));
                }
                // The poller nudges the dispatcher after each commit; so does this loop.
                dispatcher.nudge();
            }
            long deadline = System.nanoTime() + DRAIN.toNanos();
            while (!storedAt.isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
        } finally {
            stopDispatcher(camel, dispatcher);
        }
        long[] sorted;
        synchronized (waits) {
            sorted = waits.stream().mapToLong(Long::longValue).sorted().toArray();
        }
        if (sorted.length == 0) {
            return new Waits(0, measuredStored, Double.NaN, Double.NaN, Double.NaN);
        }
        return new Waits(sorted.length, measuredStored, sorted[sorted.length / 2] / 1e6, sorted[(int) (sorted.length * 0.99)] / 1e6,
                sorted[sorted.length - 1] / 1e6);
    }

    private void count(String chat, long updateId) {
        Long previous = lastUpdatePerChat.put(chat, updateId);
        if (previous != null && previous >= updateId) {
            outOfOrder.incrementAndGet();
        }
        handled.incrementAndGet();
    }

    private record Scenario(double intakeRate, double handledRate, boolean allDone) {
        double ratio() {
            return handledRate / intakeRate;
        }

        void print(PrintStream out, String name, double target) {
            out.printf("%-24s %12.0f %12.0f %7.2f %8s %s%n", name, intakeRate, handledRate, ratio(), ">= " + target,
                    ratio() >= target ? "met" : "NOT met");
        }
    }

    private Scenario scenario(DataSource dataSource, CamelContext camel, WorkDispatcher.Options options, long bot, int chats, int items)
            throws Exception {
        BotInbox inbox = BotInbox.open(dataSource, bot);
        String text = "x".repeat(900);
        long start = System.nanoTime();
        for (int first = 1; first <= items; first += BATCH) {
            List<BotApiClient.RawUpdate> batch = new ArrayList<>(BATCH);
            for (int id = first; id < first + BATCH && id <= items; id++) {
                batch.add(BotInbox.message(id, 1 + id % chats, text));
            }
            inbox.store(batch);
        }
        double intakeRate = items / ((System.nanoTime() - start) / 1e9);

        handled.set(0);
        start = System.nanoTime();
        WorkDispatcher dispatcher = startDispatcher(camel, dataSource, options);
        double handledRate;
        try {
            long deadline = System.nanoTime() + Duration.ofMinutes(10).toNanos();
            while (System.nanoTime() < deadline && (handled.get() < items || unfinished(dataSource, bot) > 0)) {
                Thread.sleep(handled.get() < items ? 2 : 10);
            }
            handledRate = items / ((System.nanoTime() - start) / 1e9);
        } finally {
            stopDispatcher(camel, dispatcher);
        }
        return new Scenario(intakeRate, handledRate, handled.get() == items && unfinished(dataSource, bot) == 0);
    }

    /** A dispatcher of these options, bound where the handler route's work consumer finds it, and that route started. */
    private static WorkDispatcher startDispatcher(CamelContext camel, DataSource dataSource, WorkDispatcher.Options options) throws Exception {
        WorkDispatcher dispatcher = new WorkDispatcher(camel, new WorkQueue(dataSource), List.of(new TelegramWorkSource()), options);
        camel.getRegistry().bind("workDispatcher", dispatcher);
        camel.getRouteController().startRoute("bench-handler");
        dispatcher.start();
        return dispatcher;
    }

    private static void stopDispatcher(CamelContext camel, WorkDispatcher dispatcher) throws Exception {
        dispatcher.stop();
        camel.getRouteController().stopRoute("bench-handler");
        camel.getRegistry().unbind("workDispatcher");
    }

    private static long unfinished(DataSource dataSource, long bot) throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT count(*) FROM work_item WHERE kind = 'telegram-update' AND source_key LIKE ? AND state <> 'done'")) {
            ps.setString(1, bot + ":%");
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    /**
     * Claims (and gives back) runs from two backlogs, 1,000 and 100,000 items over 100 chats, each
     * in its own database of the same server, scheduled through the queue as intake does. The
     * claims alternate between the two, so both see the same machine. @return p50 and p99 of a
     * claim in ms, for the small backlog then the large one
     */
    private static double[][] claimLatencies(EmbeddedDatabase server, DataSource admin) throws SQLException {
        try (Database small = backlog(server, admin, "bench_claim_1k", 1_000);
             Database large = backlog(server, admin, "bench_claim_100k", 100_000)) {
            WorkQueue[] queues = {new WorkQueue(small.dataSource()), new WorkQueue(large.dataSource())};
            double[][] millis = new double[2][CLAIM_SAMPLES];
            for (int i = 0; i < CLAIM_SAMPLES * 2; i++) {
                WorkQueue queue = queues[i % 2];
                long start = System.nanoTime();
                WorkRun run = queue.claimLane("bench", Duration.ofMinutes(1), CLAIM_RUN_SIZE, Set.of(CLAIM_KIND), Set.of(CLAIM_KIND));
                millis[i % 2][i / 2] = (System.nanoTime() - start) / 1e6;
                queue.finish(run, List.of(), run.items());
            }
            double[][] result = new double[2][];
            for (int q = 0; q < 2; q++) {
                Arrays.sort(millis[q]);
                result[q] = new double[] {millis[q][CLAIM_SAMPLES / 2], millis[q][(int) (CLAIM_SAMPLES * 0.99)]};
            }
            return result;
        }
    }

    private static Database backlog(EmbeddedDatabase server, DataSource admin, String name, int queued) throws SQLException {
        try (Connection c = admin.getConnection(); PreparedStatement ps = c.prepareStatement("CREATE DATABASE " + name)) {
            ps.execute();
        }
        Database database = Database.external(server.jdbcUrl().replaceAll("/[^/]+$", "/" + name), server.user(), server.password(), 2);
        Migrations.apply(database.dataSource());
        try (Connection c = database.dataSource().getConnection()) {
            c.setAutoCommit(false);
            for (int first = 0; first < queued; first += 1000) {
                List<WorkQueue.NewWork> work = new ArrayList<>();
                for (int i = first; i < Math.min(queued, first + 1000); i++) {
                    work.add(new WorkQueue.NewWork(CLAIM_KIND, CLAIM_KIND + ":" + i, i, "chat-" + i % 100));
                }
                WorkQueue.schedule(c, work);
                c.commit();
            }
            c.setAutoCommit(true);
            try (PreparedStatement ps = c.prepareStatement("VACUUM ANALYZE work_item")) {
                ps.execute();
            }
        }
        return database;
    }
}
