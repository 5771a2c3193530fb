package io.chatintake.ops.bench;

import io.chatintake.sim.BotApiSimulator;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@code bench bots [B]} (B default 100): B bots listed in the runner's configuration (child
 * process, shipped route template, handlers running), each receiving a steady 50 updates/s at
 * the simulator plus a burst of one second's worth every {@link #BURST_EVERY}. Judged:
 * <ul>
 * <li>for every bot, p99 from an update being available at the simulator to its row's
 *     transaction ({@code telegram_update.received_at}) &lt; 1 s;</li>
 * <li>all the bots' updates stored at &gt;= 0.8x the rate of the hand-written loop polling one bot
 *     offered the same total rate (both: offered updates over the time until the last is stored);</li>
 * <li>the runner's live threads (read at the end of the load) and heap after a full collection
 *     (once everything offered is stored and handled) with B bots at most 1.2x those of a runner
 *     with 10 bots under the same per-bot load.</li>
 * </ul>
 */
public final class ManyBotsBenchmark {
    private static final int PER_BOT_PER_SECOND = 50;
    private static final Duration TICK = Duration.ofMillis(100);
    private static final Duration BURST_EVERY = Duration.ofSeconds(5);
    /** One round of warm-up; the runner takes rounds until its JIT has settled ({@link BenchRunner#warmUntilCompiled}). */
    private static final Duration WARM_UP = Duration.ofSeconds(10);
    private static final int MAX_WARM_UP_ROUNDS = 6;
    private static final Duration LOAD = Duration.ofSeconds(30);
    private static final Duration DRAIN_WAIT = Duration.ofMinutes(5);
    private static final int FEW_BOTS = 10;
    private static final long CONTENDER_BOT = 8000;
    private static final int CHATS_PER_BOT = 5;
    private static final String PAD = "z".repeat(200);
    private static final String ALL_WORK_DONE = "SELECT CASE WHEN EXISTS (SELECT 1 FROM chat_intake.work_item WHERE state <> 'done') THEN 0 ELSE 1 END";

    private final PrintStream out;

    public ManyBotsBenchmark(PrintStream out) {
        this.out = out;
    }

    /** What one runner (or the contender) did under the load. */
    record Phase(int bots, long offered, Duration untilStored, boolean drained, double worstP99Millis, String worstBot, int threads,
                 long heapBytes, BenchRunner.Warmed warmed) {
        double rate() {
            return offered / (untilStored.toNanos() / 1e9);
        }
    }

    /** @return 0 when every target is met */
    public int run(int bots) throws Exception {
        try (BenchDatabase database = BenchDatabase.start("bots", 4); BotApiSimulator simulator = BotApiSimulator.start()) {
            database.execute("""
                    CREATE TABLE public.bench_update (bot_id bigint, update_id bigint, payload jsonb NOT NULL,
                                                      received_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (bot_id, update_id));
                    CREATE TABLE public.bench_checkpoint (bot_id bigint PRIMARY KEY, next_offset bigint NOT NULL);
                    INSERT INTO public.bench_checkpoint VALUES (%d, 0)""".formatted(CONTENDER_BOT));
            Phase contender = contender(database, simulator, bots);
            Phase few = bots > FEW_BOTS ? ours(database, simulator, FEW_BOTS, 1) : null;
            Phase many = ours(database, simulator, bots, 1 + FEW_BOTS);
            out.printf("load: %d updates/s per bot plus a burst of %d every %d s, %d s measured after rounds of %d s of warm-up; ~300 B"
                    + " text updates in %d chats a bot; fsync on, handlers running%n", PER_BOT_PER_SECOND, PER_BOT_PER_SECOND,
                    BURST_EVERY.toSeconds(), LOAD.toSeconds(), WARM_UP.toSeconds(), CHATS_PER_BOT);
            print("hand-written loop, one bot at the total rate", contender);
            if (few != null) {
                print("chat-intake, " + few.bots() + " bots", few);
            }
            print("chat-intake, " + many.bots() + " bots", many);
            boolean latency = many.drained() && many.worstP99Millis() < 1000;
            double ratio = many.rate() / contender.rate();
            boolean rate = many.drained() && ratio >= 0.8;
            out.printf("p99 available -> stored, worst bot: %.0f ms (target < 1000 ms for every bot): %s%n", many.worstP99Millis(),
                    latency ? "met" : "NOT met");
            out.printf("stored %.0f/s against the loop's %.0f/s: ratio %.2f (target >= 0.80): %s%n", many.rate(), contender.rate(), ratio,
                    rate ? "met" : "NOT met");
            boolean flat = true;
            if (few != null) {
                double threads = (double) many.threads() / few.threads();
                double heap = (double) many.heapBytes() / few.heapBytes();
                flat = threads <= 1.2 && heap <= 1.2;
                out.printf("from %d to %d bots: threads %d -> %d (%.2fx), heap after GC %.1f -> %.1f MB (%.2fx) (target <= 1.2x each): %s%n",
                        few.bots(), many.bots(), few.threads(), many.threads(), threads, few.heapBytes() / 1e6, many.heapBytes() / 1e6, heap,
                        flat ? "met" : "NOT met");
            }
            return latency && rate && flat ? 0 : 1;
        }
    }

    private void print(String what, Phase phase) {
        out.printf("%-48s offered %d, all stored %s in %.1f s: %.0f/s; p99 available -> stored %.0f ms (worst: %s)%s%s%n", what,
                phase.offered(), phase.drained() ? "" : "NOT", phase.untilStored().toMillis() / 1e3, phase.rate(),
                phase.worstP99Millis(), phase.worstBot(),
                phase.threads() > 0 ? ", %d threads, heap after GC %.1f MB".formatted(phase.threads(), phase.heapBytes() / 1e6) : "",
                phase.warmed() == null ? "" : "; warmed up %d x %d s (%s)".formatted(phase.warmed().rounds(), WARM_UP.toSeconds(),
                        phase.warmed().describe()));
    }

    private Phase contender(BenchDatabase database, BotApiSimulator simulator, int bots) throws Exception {
        String token = simulator.addBot(CONTENDER_BOT, "BENCH-bots-contender-not-a-real-token", "contender_bot");
        HandWrittenLoop loop = new HandWrittenLoop(database, simulator.url(), token, CONTENDER_BOT, 100);
        ExecutorService polling = Executors.newSingleThreadExecutor();
        try {
            // One bot carrying everyone's load: its ticks are the bots' ticks added up.
            List<String> tokens = List.of(token);
            int multiplier = bots;
            long warm = load(simulator, tokens, multiplier, WARM_UP, "warm");
            polling.submit(() -> {
                loop.take((int) warm);
                return null;
            }).get();
            long start = System.nanoTime();
            AtomicLong target = new AtomicLong(Long.MAX_VALUE);
            Future<?> taking = polling.submit(() -> {
                loop.take(target::get);
                return null;
            });
            target.set(load(simulator, tokens, multiplier, LOAD, "measured"));
            taking.get(DRAIN_WAIT.toMillis(), TimeUnit.MILLISECONDS);
            Duration until = Duration.ofNanos(System.nanoTime() - start);
            Latency latency = latency(database, "public.bench_update", CONTENDER_BOT);
            return new Phase(1, target.get(), until, true, latency.p99Millis(), latency.bot(), 0, 0, null);
        } finally {
            polling.shutdownNow();
        }
    }

    private Phase ours(BenchDatabase database, BotApiSimulator simulator, int bots, int firstId) throws Exception {
        long firstBotId = 7000L + firstId;
        String stored = "SELECT count(*) FROM chat_intake.telegram_update WHERE bot_id >= " + firstBotId;
        Map<String, String> env = new HashMap<>(database.runnerEnv());
        List<String> names = new ArrayList<>();
        List<String> tokens = new ArrayList<>();
        for (int i = 0; i < bots; i++) {
            String name = "bot" + (firstId + i);
            String token = simulator.addBot(firstBotId + i, "BENCH-bots-" + (firstId + i) + "-not-a-real-token", name);
            names.add(name);
            tokens.add(token);
            env.put("TELEGRAM_BOTS_" + name.toUpperCase() + "_TOKEN", token);
        }
        env.put("TELEGRAM_BOTS", String.join(",", names));
        env.put("TELEGRAM_API_URL", simulator.url());
        try (BenchRunner runner = BenchRunner.start(database.dir().resolve("runner-" + bots), env)) {
            awaitCount(database, "SELECT count(*) FROM chat_intake.telegram_checkpoint WHERE bot_id >= " + firstBotId, bots,
                    "not every bot took its poll lease");
            AtomicLong warm = new AtomicLong();
            BenchRunner.Warmed warmed = runner.warmUntilCompiled(MAX_WARM_UP_ROUNDS, () -> {
                warm.addAndGet(load(simulator, tokens, 1, WARM_UP, "warm"));
                awaitCount(database, stored, warm.get(), "the warm-up was not stored");
            });
            long start = System.nanoTime();
            long offered = load(simulator, tokens, 1, LOAD, "measured");
            // Read at the end of the load, with every bot busy, before draining.
            int threads = runner.threadCount();
            boolean drained = awaitCount(database, stored, warm.get() + offered, null);
            Duration until = Duration.ofNanos(System.nanoTime() - start);
            // Read once the handlers have caught up too: the bots' own cost, not the runs in flight
            // (intake holds the handlers back while it is behind, so their backlog varies from run to run).
            awaitCount(database, ALL_WORK_DONE, 1, "the stored updates were not handled");
            long heap = runner.heapAfterGc();
            Latency latency = latency(database, "chat_intake.telegram_update", firstBotId);
            return new Phase(bots, offered, until, drained, latency.p99Millis(), latency.bot(), threads, heap, warmed);
        }
    }

    /**
     * Offers the load to each bot for {@code length}: {@link #PER_BOT_PER_SECOND} spread over ticks,
     * and every {@link #BURST_EVERY} one second's worth more at once; {@code multiplier} times that
     * when one bot carries several bots' load.
     *
     * @return the updates offered
     */
    private static long load(BotApiSimulator simulator, List<String> tokens, int multiplier, Duration length, String label)
            throws InterruptedException {
        long perTick = PER_BOT_PER_SECOND * TICK.toMillis() / 1000 * multiplier;
        long ticks = length.toMillis() / TICK.toMillis();
        long burstEvery = BURST_EVERY.toMillis() / TICK.toMillis();
        long start = System.nanoTime();
        long offered = 0;
        for (long tick = 0; tick < ticks; tick++) {
            long count = perTick + (tick % burstEvery == burstEvery - 1 ? (long) PER_BOT_PER_SECOND * multiplier : 0);
            for (String token : tokens) {
                for (int i = 0; i < count; i++) {
                    simulator.enqueueText(token, 1 + i % CHATS_PER_BOT, label + " " + System.currentTimeMillis() + " " + PAD);
                }
                offered += count;
            }
            long next = start + (tick + 1) * TICK.toNanos();
            long sleep = next - System.nanoTime();
            if (sleep > 0) {
                Thread.sleep(sleep / 1_000_000, (int) (sleep % 1_000_000));
            }
        }
        return offered;
    }

    private record Latency(double p99Millis, String bot) {
    }

    /** The worst bot's p99 from enqueued (the millis in the text) to its row's transaction, over the measured updates. */
    private static Latency latency(BenchDatabase database, String table, long firstBotId) throws Exception {
        String sql = """
                SELECT bot_id, percentile_disc(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM received_at) * 1000
                                                                   - split_part(payload->'message'->>'text', ' ', 2)::bigint)
                  FROM %s WHERE bot_id >= %d AND payload->'message'->>'text' LIKE 'measured %%'
                 GROUP BY bot_id ORDER BY 2 DESC LIMIT 1""".formatted(table, firstBotId);
        try (var c = database.dataSource().getConnection(); var ps = c.prepareStatement(sql); var rs = ps.executeQuery()) {
            return rs.next() ? new Latency(rs.getDouble(2), "bot id " + rs.getLong(1)) : new Latency(Double.NaN, "none");
        }
    }

    /** @return whether the count reached {@code atLeast} within the drain wait; fails with {@code failure} if given */
    private static boolean awaitCount(BenchDatabase database, String sql, long atLeast, String failure) throws Exception {
        long deadline = System.nanoTime() + DRAIN_WAIT.toNanos();
        while (database.queryLong(sql) < atLeast) {
            if (System.nanoTime() > deadline) {
                if (failure != null) {
                    throw new IllegalStateException(failure + " within " + DRAIN_WAIT.toMinutes() + " minutes");
                }
                return false;
            }
            Thread.sleep(50);
        }
        return true;
    }
}
