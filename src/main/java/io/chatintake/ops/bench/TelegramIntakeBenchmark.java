package io.chatintake.ops.bench;

import io.chatintake.sim.BotApiSimulator;
import java.io.PrintStream;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.apache.camel.CamelContext;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.impl.DefaultCamelContext;

/**
 * {@code bench telegram [N]}: Telegram intake of the runner (child process, shipped routes and
 * handlers, work dispatcher) against the hand-written loop every poller is compared with:
 * java.net.http getUpdates -> one JDBC batch insert + checkpoint update, one commit -> next poll.
 * Both poll the same {@link BotApiSimulator} and commit to the same fresh durable database in
 * the same run, with the same load, in each of two shapes ({@link Shape}): short texts in many
 * chats, and ~1 KB texts in one chat. Per shape the contender runs before and after ours and the
 * ratio uses their mean, so a machine that drifts during the run does not pick a winner; ours is
 * timed to the checkpoint passing the last update (stored) and to its last work item done
 * (stored and handled, end to end). Targets: stored >= 0.95x, end to end >= 0.6x the contender.
 * The stock Camel route (camel-telegram -> camel-sql) runs in the same run too, its rate printed
 * for comparison. The CPU each process spent per update tells where ours spends more: the bench
 * process serves the simulator (and runs the loop), the runner polls, stores and handles,
 * PostgreSQL serves both.
 * <p>
 * {@code bench telegram --cold [N]} (N default 20,000): a bot back from an outage, per shape. N
 * updates wait at the simulator before anything starts; a freshly started runner (handlers
 * running) drains them, timed from its first getUpdates to the checkpoint passing the last (and to
 * the last handled), against a freshly created hand-written loop draining its own N, unwarmed too.
 * Targets: stored >= 0.8x, end to end >= 0.6x.
 */
public final class TelegramIntakeBenchmark {
    private static final int BATCH = 100;
    private static final double TARGET = 0.95;
    private static final double COLD_TARGET = 0.8;
    private static final double END_TO_END_TARGET = 0.6;
    private static final long CONTENDER_BOT = 9002;
    private static final long RUNNER_BOT = 9001;
    private static final long STOCK_BOT = 9003;
    private static final String HANDLED = "SELECT count(*) FROM chat_intake.work_item WHERE kind = 'telegram-update' AND state = 'done'";
    /**
     * 1 once every update the bot stored has its work item and none is unfinished. Asked every 10 ms
     * while the runner handles: a count of every item done would read the whole table each time
     * and take a core of the database from the runner it measures, which the contender, waited
     * for in this process, never pays.
     */
    private static final String ALL_HANDLED = """
            SELECT CASE WHEN COALESCE((SELECT scheduled_through FROM chat_intake.telegram_schedule_checkpoint WHERE bot_id = %1$d), 0)
                                 >= (SELECT max(id) FROM chat_intake.telegram_update WHERE bot_id = %1$d)
                             AND NOT EXISTS (SELECT 1 FROM chat_intake.work_item WHERE kind = 'telegram-update' AND state <> 'done')
                        THEN 1 ELSE 0 END""";
    /**
     * Each side first takes this many updates untimed, so neither is measured while its JIT warms
     * up. The runner takes rounds of it until its JIT has settled ({@link BenchRunner#warmUntilCompiled}).
     */
    private static final int WARM_UP = 10_000;
    private static final int MAX_WARM_UP_ROUNDS = 10;
    /** {@code WORK_CONCURRENCY=0} runs the runner without handlers: nothing is handled, so no end-to-end figure. */
    private static final boolean HANDLERS_ON = !"0".equals(System.getenv("WORK_CONCURRENCY"));

    /** A load's shape: how many chats the updates are spread over, and their text. */
    record Shape(String name, int chats, String text) {
        /** Short texts in many chats: many lanes, small rows. */
        static final Shape MANY_CHATS = new Shape("short texts in 1,000 chats", 1000, "hello there");
        /** ~1 KB texts, all in one busy chat: one lane, rows as the issue measured them. */
        static final Shape ONE_CHAT = new Shape("~1 KB texts in one chat", 1, "x".repeat(900));
        static final List<Shape> ALL = List.of(MANY_CHATS, ONE_CHAT);

        void enqueue(BotApiSimulator simulator, String token, int updates) {
            for (int i = 0; i < updates; i++) {
                simulator.enqueueText(token, 1 + i % chats, text);
            }
        }
    }

    private final PrintStream out;

    public TelegramIntakeBenchmark(PrintStream out) {
        this.out = out;
    }

    /** @return 0 when every shape's ratios reach their targets */
    public int run(int updates) throws Exception {
        try (BenchDatabase database = BenchDatabase.start("telegram", 4); BotApiSimulator simulator = BotApiSimulator.start()) {
            database.execute("""
                    CREATE TABLE public.bench_update (bot_id bigint, update_id bigint, payload jsonb NOT NULL, PRIMARY KEY (bot_id, update_id));
                    CREATE TABLE public.bench_checkpoint (bot_id bigint PRIMARY KEY, next_offset bigint NOT NULL);
                    CREATE TABLE public.bench_stock_update (id bigserial PRIMARY KEY, payload jsonb NOT NULL);
                    INSERT INTO public.bench_checkpoint VALUES (%d, 0)""".formatted(CONTENDER_BOT));
            String contenderToken = simulator.addBot(CONTENDER_BOT, "BENCH-contender-not-a-real-token", "contender_bot");
            HandWrittenLoop loop = new HandWrittenLoop(database, simulator.url(), contenderToken, CONTENDER_BOT, BATCH);
            Shape.MANY_CHATS.enqueue(simulator, contenderToken, WARM_UP);
            loop.take(WARM_UP);
            Supplier<CpuUse> noRunner = () -> CpuUse.now(Optional.empty(), database.server());

            String token = simulator.addBot(RUNNER_BOT, "BENCH-runner-not-a-real-token", "runner_bot");
            Map<String, String> env = runnerEnv(database, simulator, token);
            AtomicLong sent = new AtomicLong();
            BenchRunner.Warmed warmed;
            boolean met = true;
            try (BenchRunner runner = BenchRunner.start(database.dir().resolve("runner"), env)) {
                warmed = runner.warmUntilCompiled(MAX_WARM_UP_ROUNDS, () -> {
                    Shape.MANY_CHATS.enqueue(simulator, token, WARM_UP);
                    awaitOffset(database, RUNNER_BOT, sent.addAndGet(WARM_UP) + 1);
                    // Ours starts with nothing left to handle, as the contender starts with nothing to do.
                    awaitHandled(database, RUNNER_BOT);
                });
                out.printf("updates: %d per shape, batches of %d, fsync on; runner with routes/ and the work dispatcher,"
                        + " warmed up with %d updates (%s); the contender runs while the runner idles%n", updates, BATCH, sent.get(),
                        warmed.describe());
                for (Shape shape : Shape.ALL) {
                    Timed before = timed(() -> shape.enqueue(simulator, contenderToken, updates), updates, noRunner, () -> loop.take(updates));
                    long handledBefore = handled(database);
                    long through = sent.addAndGet(updates);
                    Timed stored = timed(() -> shape.enqueue(simulator, token, updates), updates,
                            () -> CpuUse.now(runner.handle(), database.server()), () -> awaitOffset(database, RUNNER_BOT, through + 1));
                    awaitHandled(database, RUNNER_BOT);
                    Duration endToEnd = stored.wall().plusNanos(System.nanoTime() - stored.endedAt());
                    long handledMeanwhile = handled(database) - handledBefore;
                    Timed after = timed(() -> shape.enqueue(simulator, contenderToken, updates), updates, noRunner, () -> loop.take(updates));
                    double contender = (before.rate() + after.rate()) / 2;
                    double ratio = stored.rate() / contender;
                    double endToEndRate = updates / (endToEnd.toNanos() / 1e9);
                    double endToEndRatio = endToEndRate / contender;
                    met &= ratio >= TARGET && (!HANDLERS_ON || endToEndRatio >= END_TO_END_TARGET);
                    out.printf("%n%s:%n", shape.name());
                    out.printf("  hand-written loop (getUpdates -> JDBC batch + checkpoint, one commit): %.0f/s before, %.0f/s after,"
                            + " mean %.0f updates/s%n", before.rate(), after.rate(), contender);
                    out.printf("    hand-written loop (the bench process runs it and the simulator) %s%n",
                            before.cpu().plus(after.cpu()).describe(2 * updates, "update", before.wall().plus(after.wall())));
                    out.printf("  chat-intake stored and confirmed: %.0f updates/s; stored and handled end to end: %.0f updates/s"
                            + " (%d work items finished)%n", stored.rate(), endToEndRate, handledMeanwhile);
                    out.printf("    chat-intake (the runner polls, stores, schedules and handles) %s%n",
                            stored.cpu().describe(updates, "update", stored.wall()));
                    out.printf("  ratio stored %.2f (target >= %.2f): %s; end to end %.2f (target >= %.2f): %s%n", ratio, TARGET,
                            verdict(ratio, TARGET), endToEndRatio, END_TO_END_TARGET, verdict(endToEndRatio, END_TO_END_TARGET));
                }
            }
            double stock;
            String stockToken = simulator.addBot(STOCK_BOT, "BENCH-stock-not-a-real-token", "stock_bot");
            try (StockCamelRoute route = StockCamelRoute.start(database, simulator.url(), stockToken)) {
                Shape.MANY_CHATS.enqueue(simulator, stockToken, WARM_UP);
                route.awaitStored(WARM_UP);
                stock = timed(() -> Shape.MANY_CHATS.enqueue(simulator, stockToken, updates), updates, noRunner,
                        () -> route.awaitStored(WARM_UP + updates)).rate();
            }
            double simulatorAlone = timed(() -> Shape.MANY_CHATS.enqueue(simulator, contenderToken, updates), updates, noRunner,
                    () -> loop.poll(updates)).rate();
            out.printf("%nstock Camel (camel-telegram consumer -> camel-sql INSERT per update, %s):  %.0f updates/s"
                    + " (a failed insert is confirmed all the same)%n", Shape.MANY_CHATS.name(), stock);
            out.printf("the simulator alone (the same loop, nothing stored):                     %.0f updates/s%n", simulatorAlone);
            out.printf("verdict: %s%n", met ? "every shape met its targets" : "a target NOT met");
            return met ? 0 : 1;
        }
    }

    /** @return 0 when a fresh runner drains each shape's backlog at the target ratios */
    public int runCold(int updates) throws Exception {
        try (BenchDatabase database = BenchDatabase.start("telegram-cold", 4); BotApiSimulator simulator = BotApiSimulator.start()) {
            database.execute("""
                    CREATE TABLE public.bench_update (bot_id bigint, update_id bigint, payload jsonb NOT NULL, PRIMARY KEY (bot_id, update_id));
                    CREATE TABLE public.bench_checkpoint (bot_id bigint PRIMARY KEY, next_offset bigint NOT NULL)""");
            Supplier<CpuUse> noRunner = () -> CpuUse.now(Optional.empty(), database.server());
            out.printf("updates: %d per shape waiting at the simulator for each bot, batches of %d, fsync on%n", updates, BATCH);
            boolean met = true;
            for (int s = 0; s < Shape.ALL.size(); s++) {
                Shape shape = Shape.ALL.get(s);
                long contenderBot = CONTENDER_BOT + 10L * s;
                long runnerBot = RUNNER_BOT + 10L * s;
                database.execute("INSERT INTO public.bench_checkpoint VALUES (%d, 0)".formatted(contenderBot));
                String contenderToken = simulator.addBot(contenderBot, "BENCH-contender-not-a-real-token-" + s, "contender_bot_" + s);
                String token = simulator.addBot(runnerBot, "BENCH-runner-not-a-real-token-" + s, "runner_bot_" + s);
                shape.enqueue(simulator, contenderToken, updates);
                shape.enqueue(simulator, token, updates);
                HandWrittenLoop loop = new HandWrittenLoop(database, simulator.url(), contenderToken, contenderBot, BATCH);
                CpuUse contenderCpu = noRunner.get();
                long start = System.nanoTime();
                loop.take(updates);
                Timed contender = new Timed(updates, Duration.ofNanos(System.nanoTime() - start), noRunner.get().since(contenderCpu),
                        System.nanoTime());

                Map<String, String> env = runnerEnv(database, simulator, token);
                Duration drained;
                Duration handledAll;
                Duration fromLaunch;
                Instant launchedAt = Instant.now();
                try (BenchRunner runner = BenchRunner.launch(database.dir().resolve("runner-" + s), env)) {
                    awaitOffset(database, runnerBot, updates + 1L);
                    Instant done = Instant.now();
                    awaitHandled(database, runnerBot);
                    Instant handled = Instant.now();
                    Instant firstPoll = simulator.requests().stream()
                            .filter(r -> r.botId() == runnerBot && r.method().equals("getUpdates")).map(BotApiSimulator.Request::at)
                            .min(Instant::compareTo).orElseThrow();
                    drained = Duration.between(firstPoll, done);
                    handledAll = Duration.between(firstPoll, handled);
                    fromLaunch = Duration.between(launchedAt, done);
                }
                double ours = updates / (drained.toNanos() / 1e9);
                double endToEnd = updates / (handledAll.toNanos() / 1e9);
                double ratio = ours / contender.rate();
                double endToEndRatio = endToEnd / contender.rate();
                met &= ratio >= COLD_TARGET && (!HANDLERS_ON || endToEndRatio >= END_TO_END_TARGET);
                out.printf("%n%s:%n", shape.name());
                out.printf("  hand-written loop, fresh (getUpdates -> JDBC batch + checkpoint, one commit): %.0f updates/s (%.1f s)%n",
                        contender.rate(), contender.wall().toMillis() / 1e3);
                out.printf("    hand-written loop %s%n", contender.cpu().describe(updates, "update", contender.wall()));
                out.printf("  chat-intake runner, fresh (handlers running): stored and confirmed %.0f updates/s (%.1f s from its first"
                        + " getUpdates, %.1f s from launch); stored and handled end to end %.0f updates/s (%.1f s)%n", ours,
                        drained.toMillis() / 1e3, fromLaunch.toMillis() / 1e3, endToEnd, handledAll.toMillis() / 1e3);
                out.printf("  ratio stored %.2f (target >= %.2f): %s; end to end %.2f (target >= %.2f): %s%n", ratio, COLD_TARGET,
                        verdict(ratio, COLD_TARGET), endToEndRatio, END_TO_END_TARGET, verdict(endToEndRatio, END_TO_END_TARGET));
            }
            out.printf("%nverdict: %s%n", met ? "every shape met its targets" : "a target NOT met");
            return met ? 0 : 1;
        }
    }

    private static String verdict(double ratio, double target) {
        return !HANDLERS_ON && target == END_TO_END_TARGET ? "handlers off" : ratio >= target ? "met" : "NOT met";
    }

    private static void awaitHandled(BenchDatabase database, long botId) throws Exception {
        if (HANDLERS_ON) {
            await(() -> database.queryLong(ALL_HANDLED.formatted(botId)), 1, "the runner did not handle the updates");
        }
    }

    /** The runner polling the one bot of {@code token} at the simulator, with short long polls. */
    private static Map<String, String> runnerEnv(BenchDatabase database, BotApiSimulator simulator, String token) {
        Map<String, String> env = new HashMap<>(database.runnerEnv());
        env.put("TELEGRAM_BOT_TOKEN", token);
        env.put("TELEGRAM_API_URL", simulator.url());
        env.put("TELEGRAM_POLL_TIMEOUT_SECONDS", "1");
        return env;
    }

    /** A timed phase: its updates, how long they took, the CPU each process spent meanwhile, and when it ended (System.nanoTime()). */
    private record Timed(int updates, Duration wall, CpuUse cpu, long endedAt) {
        double rate() {
            return updates / (wall.toNanos() / 1e9);
        }
    }

    /** From {@code enqueue} queuing the updates at the simulator to {@code untilStored} returning. */
    private static Timed timed(Runnable enqueue, int updates, Supplier<CpuUse> cpu, BenchRunner.Round untilStored) throws Exception {
        CpuUse cpuBefore = cpu.get();
        long start = System.nanoTime();
        enqueue.run();
        untilStored.run();
        long end = System.nanoTime();
        return new Timed(updates, Duration.ofNanos(end - start), cpu.get().since(cpuBefore), end);
    }

    private static void awaitOffset(BenchDatabase database, long botId, long offset) throws Exception {
        await(() -> database.queryLong("SELECT next_offset FROM chat_intake.telegram_checkpoint WHERE bot_id = " + botId), offset,
                "the runner did not store the updates");
    }

    @FunctionalInterface
    private interface Count {
        long get() throws Exception;
    }

    /** Waits until the count reaches {@code atLeast}: at most 10 minutes, then fails with {@code failure}. */
    private static void await(Count count, long atLeast, String failure) throws Exception {
        long deadline = System.nanoTime() + 600_000_000_000L;
        while (count.get() < atLeast) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(failure + " within 10 minutes");
            }
            Thread.sleep(10);
        }
    }

    private static long handled(BenchDatabase database) throws SQLException {
        return database.queryLong(HANDLED);
    }

    /**
     * The stock Camel way, for comparison only: camel-telegram's polling consumer, each update
     * mapped to its model, marshalled back to JSON and inserted by camel-sql in a commit of its
     * own. Its next poll confirms the batch whether or not the inserts committed (a failed insert
     * is logged and the update is gone), and what it stores is its model, not what Telegram sent;
     * its rate is printed, it is not the target's contender.
     */
    private static final class StockCamelRoute implements AutoCloseable {
        private final CamelContext camel;
        /** Inserts committed (camel-sql commits each before the route goes on): counted here, so waiting costs the database nothing. */
        private final AtomicLong stored;

        private StockCamelRoute(CamelContext camel, AtomicLong stored) {
            this.camel = camel;
            this.stored = stored;
        }

        static StockCamelRoute start(BenchDatabase database, String apiUrl, String token) throws Exception {
            CamelContext camel = new DefaultCamelContext();
            camel.getRegistry().bind("benchDataSource", database.dataSource());
            AtomicLong stored = new AtomicLong();
            camel.addRoutes(new RouteBuilder() {
                @Override
                public void configure() {
                    from("telegram:bots?authorizationToken=RAW(" + token + ")&baseUri=" + apiUrl
                            + "&limit=" + BATCH + "&timeout=1&initialDelay=0&delay=0&greedy=true")
                            .marshal().json()
                            .convertBodyTo(String.class)
                            .to("sql:INSERT INTO public.bench_stock_update (payload) VALUES (CAST(:#${body} AS jsonb))"
                                    + "?dataSource=#benchDataSource")
                            .process(exchange -> stored.incrementAndGet());
                }
            });
            camel.start();
            return new StockCamelRoute(camel, stored);
        }

        void awaitStored(long updates) throws Exception {
            await(stored::get, updates, "the stock Camel route did not store " + updates + " updates");
        }

        @Override
        public void close() throws Exception {
            camel.close();
        }
    }
}
