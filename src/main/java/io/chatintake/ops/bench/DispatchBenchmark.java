package io.chatintake.ops.bench;

import io.chatintake.album.AlbumKey;
import io.chatintake.album.QuietPeriods;
import io.chatintake.attachment.AttachmentStore;
import io.chatintake.message.ChildMessageListener;
import io.chatintake.channel.telegram.BotApiClient;
import io.chatintake.channel.telegram.OffsetCheckpoint;
import io.chatintake.channel.telegram.PollLease;
import io.chatintake.channel.telegram.TelegramInbox;
import io.chatintake.channel.telegram.TelegramInboxConsumer;
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
import java.nio.file.Files;
import java.nio.file.Path;
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
 * of a claim with 100,000 queued <= 1.5x that with 1,000 (p50).
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

    private final PrintStream out;
    private final Map<String, Long> lastUpdatePerChat = new ConcurrentHashMap<>();
    private final AtomicLong handled = new AtomicLong();
    private final AtomicLong outOfOrder = new AtomicLong();

    public DispatchBenchmark(PrintStream out) {
        this.out = out;
    }

    /** @return 0 when every target is met and no item was lost, repeated or reordered */
    public int run(int items) throws Exception {
        Path dir = Files.createTempDirectory("chat-intake-bench-dispatch");
        EmbeddedDatabase embedded = EmbeddedDatabase.start(dir.resolve("pg"), 0, true);
        try (Database database = Database.embedded(embedded, 16)) {
            Migrations.apply(database.dataSource());
            CamelContext camel = new DefaultCamelContext();
            camel.addRoutes(new RouteBuilder() {
                @Override
                public void configure() {
                    from("direct:telegram-update").routeId("bench-handler").process(e -> count(
                            e.getMessage().getHeader(TelegramInboxConsumer.BOT_ID, Long.class) + ":"
                                    + e.getMessage().getHeader(TelegramInboxConsumer.CHAT_ID, String.class),
                            e.getMessage().getHeader(TelegramInboxConsumer.UPDATE_ID, Long.class)));
                }
            });
            camel.start();
            try {
                WorkDispatcher.Options options = WorkDispatcher.Options.from(Settings.of(Map.of()));
                out.printf("dispatch bench: %d items of ~1 KB, durable embedded PostgreSQL, %d dispatcher threads, runs of up to %d%n",
                        items, options.concurrency(), options.runSize());
                Scenario one = scenario(database.dataSource(), camel, options, 9101, 1, items);
                Scenario many = scenario(database.dataSource(), camel, options, 9102, 100, items);
                double[][] claims = claimLatencies(embedded, database.dataSource());
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
            } finally {
                camel.stop();
            }
        }
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
        new OffsetCheckpoint(dataSource).load(bot, "bench-" + bot);
        PollLease.Held lease = new PollLease(dataSource).tryAcquire(bot, "bench", LEASE).orElseThrow();
        TelegramInbox inbox = new TelegramInbox(dataSource,
                ChildMessageListener.all(List.of(AttachmentStore::recordChildren, AlbumKey.scheduler(QuietPeriods.DEFAULTS))));
        String text = "x".repeat(900);
        long start = System.nanoTime();
        for (int first = 1; first <= items; first += BATCH) {
            List<BotApiClient.RawUpdate> batch = new ArrayList<>(BATCH);
            for (int id = first; id < first + BATCH && id <= items; id++) {
                batch.add(new BotApiClient.RawUpdate(id, "message", "{\"update_id\":" + id + ",\"message\":{\"message_id\":" + id
                        + ",\"chat\":{\"id\":" + (1 + id % chats) + ",\"type\":\"private\"},\"date\":1,\"text\":\"" + text + "\"}}"));
            }
            inbox.store(lease, LEASE, batch);
        }
        double intakeRate = items / ((System.nanoTime() - start) / 1e9);

        handled.set(0);
        WorkDispatcher dispatcher = new WorkDispatcher(camel, new WorkQueue(dataSource), List.of(new TelegramWorkSource("direct:telegram-update")), options);
        start = System.nanoTime();
        dispatcher.start();
        double handledRate;
        try {
            long deadline = System.nanoTime() + Duration.ofMinutes(10).toNanos();
            while (System.nanoTime() < deadline && (handled.get() < items || unfinished(dataSource, bot) > 0)) {
                Thread.sleep(handled.get() < items ? 2 : 10);
            }
            handledRate = items / ((System.nanoTime() - start) / 1e9);
        } finally {
            dispatcher.stop();
        }
        return new Scenario(intakeRate, handledRate, handled.get() == items && unfinished(dataSource, bot) == 0);
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
        Database database = Database.external(server.jdbcUrl().replaceAll("/[^/]+$", "/" + name), server.user(), Secret.of(""), 2);
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
