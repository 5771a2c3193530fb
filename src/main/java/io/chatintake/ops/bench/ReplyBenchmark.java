package io.chatintake.ops.bench;

import io.chatintake.sim.BotApiSimulator;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
import java.util.stream.Collectors;

/**
 * {@code bench replies}: the shipped echo route (routes/handlers.yaml) answering through
 * telegram-bot, in the runner as a child process, against the bundled simulator enforcing
 * Telegram's limits (429 with retry_after above 30 sends a second per bot and one a second per
 * chat). The bot's limit is measured in the same run by plain senders sending as fast as they
 * can (what the simulator accepts a second), and every figure is a ratio against that:
 * <ul>
 * <li>many chats waiting (two texts each): replies a second, target at least 0.8 of the limit;</li>
 * <li>one chat with 60 texts and 300 chats with 8: the 300 all answered within 1.25 times what the
 * limit alone allows for all the texts, every text once and in order per chat;</li>
 * <li>sends the simulator refused for its limits, under 5 % of the sends made;</li>
 * <li>two replicas sharing the bot: no second with more sends than the limit.</li>
 * </ul>
 */
public final class ReplyBenchmark {
    private static final int PER_BOT = 30;
    private static final long BOT = 9101;
    private static final double RATE_TARGET = 0.8;
    private static final double BUSY_TARGET = 1.25;
    private static final double REFUSED_TARGET = 0.05;
    private static final Duration WAIT = Duration.ofMinutes(10);
    private static final int SENDERS = 4;

    private final PrintStream out;

    public ReplyBenchmark(PrintStream out) {
        this.out = out;
    }

    /** @param chats how many chats wait with two texts each in the first load; @return 0 when every target is met */
    public int run(int chats) throws Exception {
        try (BenchDatabase database = BenchDatabase.start("replies", 4); BotApiSimulator simulator = BotApiSimulator.start()) {
            String token = simulator.addBot(BOT, "BENCH-replies-not-a-real-token", "replies_bot");
            simulator.enforceSendLimits(token, PER_BOT, 1);
            double limit = measureLimit(simulator, token, PER_BOT * 10);
            // The contender's own sends and refusals are not the runner's.
            int sentBefore = simulator.sends(token).size();
            int refusedBefore = simulator.refusedByLimits(token);
            out.printf("the bot's limit, measured: %.1f sends/s accepted (%d threads sending as fast as they can; limit set %d/s)%n",
                    limit, SENDERS, PER_BOT);

            Map<String, String> env = new HashMap<>(database.runnerEnv());
            env.put("TELEGRAM_BOT_TOKEN", token);
            env.put("TELEGRAM_API_URL", simulator.url());
            env.put("TELEGRAM_POLL_TIMEOUT_SECONDS", "1");
            env.put("TELEGRAM_ECHO_REPLIES", "true");
            boolean met;
            try (BenchRunner runner = BenchRunner.start(database.dir().resolve("runner-a"), env)) {
                // Untimed: the runner's JIT warms up on it, as the contender's did on its first sends.
                answer(simulator, token, Load.of(900_000, chats / 2, 2));
                Load many = Load.of(1_000_000, chats, 2);
                answer(simulator, token, many);
                // From its first reply to its last: every chat is waiting by then, intake's share is not in it.
                List<BotApiSimulator.Send> replies = many.sends(simulator, token);
                double rate = (replies.size() - 1) / ((replies.get(replies.size() - 1).nanos() - replies.get(0).nanos()) / 1e9);
                boolean rateMet = rate >= RATE_TARGET * limit;
                out.printf("many chats waiting (%d chats, 2 texts each): %.1f replies/s, %.2fx the limit (target >= %.2f): %s%n",
                        chats, rate, rate / limit, RATE_TARGET, rateMet ? "met" : "NOT met");

                Load busy = Load.of(2_000_000, 1, 60);
                Load others = Load.of(2_000_001, 300, 8);
                double othersSeconds = answer(simulator, token, busy, others);
                double allowed = (busy.texts() + others.texts()) / limit;
                boolean busyMet = othersSeconds <= BUSY_TARGET * allowed;
                boolean inOrder = busy.answeredOnceInOrder(simulator, token) && others.answeredOnceInOrder(simulator, token);
                out.printf("one chat with 60 texts, 300 with 8: the 300 answered in %.1f s, %.2fx the %.1f s the limit allows"
                                + " for all %d (target <= %.2f): %s; every text once, in order per chat: %s%n",
                        othersSeconds, othersSeconds / allowed, allowed, busy.texts() + others.texts(), BUSY_TARGET,
                        busyMet ? "met" : "NOT met", inOrder ? "yes" : "NO");

                int sent = simulator.sends(token).size() - sentBefore;
                int refused = simulator.refusedByLimits(token) - refusedBefore;
                boolean refusedMet = refused < REFUSED_TARGET * sent;
                out.printf("sends refused by the simulator's limits: %d of %d (%.1f %%, target < %.0f %%): %s%n",
                        refused, sent, 100.0 * refused / sent, REFUSED_TARGET * 100, refusedMet ? "met" : "NOT met");

                // Counted, not refused: a refusal would hide a second above the limit.
                simulator.enforceSendLimits(token, Integer.MAX_VALUE, 1);
                int most;
                try (BenchRunner second = BenchRunner.start(database.dir().resolve("runner-b"), env)) {
                    Load shared = Load.of(3_000_000, 200, 3);
                    answer(simulator, token, shared);
                    most = BotApiSimulator.mostSendsInOneSecond(shared.sends(simulator, token));
                }
                boolean sharedMet = most <= PER_BOT;
                out.printf("two replicas sharing the bot: at most %d sends in any one second (limit %d): %s%n",
                        most, PER_BOT, sharedMet ? "met" : "NOT met");
                met = rateMet && busyMet && inOrder && refusedMet && sharedMet;
            }
            return met ? 0 : 1;
        }
    }

    /**
     * The contender: {@link #SENDERS} threads sending to new chats as fast as they can until the
     * simulator accepted {@code accepted}; the accepted sends a second are the bot's limit as this
     * machine and simulator give it.
     */
    private static double measureLimit(BotApiSimulator simulator, String token, int accepted) throws Exception {
        HttpClient http = HttpClient.newHttpClient();
        URI send = URI.create(simulator.url() + "/bot" + token + "/sendMessage");
        AtomicInteger chats = new AtomicInteger(500_000);
        AtomicInteger sent = new AtomicInteger();
        ExecutorService senders = Executors.newFixedThreadPool(SENDERS);
        long start = System.nanoTime();
        List<Future<?>> running = new ArrayList<>();
        for (int i = 0; i < SENDERS; i++) {
            running.add(senders.submit(() -> {
                while (sent.get() < accepted) {
                    String body = "{\"chat_id\":" + chats.getAndIncrement() + ",\"text\":\"limit\"}";
                    HttpResponse<String> answer = http.send(HttpRequest.newBuilder(send).header("Content-Type", "application/json")
                            .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
                    if (answer.statusCode() == 200) {
                        sent.incrementAndGet();
                    }
                }
                return null;
            }));
        }
        for (Future<?> sender : running) {
            sender.get();
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        senders.shutdown();
        return sent.get() / seconds;
    }

    /** Queues the loads' texts and waits until the last load's chats are all answered. @return seconds from queuing to then */
    private static double answer(BotApiSimulator simulator, String token, Load... loads) throws Exception {
        long start = System.nanoTime();
        for (Load load : loads) {
            load.enqueue(simulator, token);
        }
        Load last = loads[loads.length - 1];
        await(() -> last.sends(simulator, token).size(), last.texts());
        double seconds = (System.nanoTime() - start) / 1e9;
        for (Load load : loads) {
            await(() -> load.sends(simulator, token).size(), load.texts());
        }
        return seconds;
    }

    private static void await(LongSupplier count, long atLeast) throws InterruptedException {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (count.getAsLong() < atLeast) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("only " + count.getAsLong() + " of " + atLeast + " replies within " + WAIT.toMinutes() + " minutes");
            }
            Thread.sleep(20);
        }
    }

    /** {@code perChat} texts to each of {@code chats} chats from {@code firstChat}, queued interleaved. */
    private record Load(long firstChat, int chats, int perChat) {
        static Load of(long firstChat, int chats, int perChat) {
            return new Load(firstChat, chats, perChat);
        }

        int texts() {
            return chats * perChat;
        }

        void enqueue(BotApiSimulator simulator, String token) {
            for (int m = 0; m < perChat; m++) {
                for (long chat = firstChat; chat < firstChat + chats; chat++) {
                    simulator.enqueueText(token, chat, "chat " + chat + " text " + m);
                }
            }
        }

        List<BotApiSimulator.Send> sends(BotApiSimulator simulator, String token) {
            return simulator.sends(token).stream().filter(s -> s.chatId() >= firstChat && s.chatId() < firstChat + chats).toList();
        }

        boolean answeredOnceInOrder(BotApiSimulator simulator, String token) {
            Map<Long, List<String>> expected = new HashMap<>();
            for (long chat = firstChat; chat < firstChat + chats; chat++) {
                List<String> texts = new ArrayList<>();
                for (int m = 0; m < perChat; m++) {
                    texts.add("Received: chat " + chat + " text " + m);
                }
                expected.put(chat, texts);
            }
            return expected.equals(sends(simulator, token).stream().collect(Collectors.groupingBy(BotApiSimulator.Send::chatId,
                    Collectors.mapping(BotApiSimulator.Send::text, Collectors.toList()))));
        }
    }
}
