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
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.stream.Collectors;

/**
 * {@code bench replies}: the shipped echo route (routes/handlers.yaml) answering through
 * telegram-bot, in the runner as a child process, against the bundled simulator enforcing
 * Telegram's limits (429 with retry_after above 30 sends a second per bot and one a second per
 * chat). The bot's limit is measured in the same run by a plain sender paced at it, and every
 * figure is a ratio against that:
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
            out.printf("the bot's limit, measured: %.1f sends/s accepted by a plain sender paced at %d/s%n", limit, PER_BOT);

            Map<String, String> env = new HashMap<>(database.runnerEnv());
            env.put("TELEGRAM_BOT_TOKEN", token);
            env.put("TELEGRAM_API_URL", simulator.url());
            env.put("TELEGRAM_POLL_TIMEOUT_SECONDS", "1");
            env.put("TELEGRAM_ECHO_REPLIES", "true");
            boolean met;
            try (BenchRunner runner = BenchRunner.start(database.dir().resolve("runner-a"), env)) {
                Load many = Load.of(1_000_000, chats, 2);
                double seconds = answer(simulator, token, many);
                double rate = many.texts() / seconds;
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

                int sent = simulator.sends(token).size();
                int refused = simulator.refusedByLimits(token);
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
     * The contender: one thread sending to a new chat every 1/{@code perSecond} s, as fast as the
     * bot may; its accepted sends a second are the limit as this machine and simulator give it.
     */
    private static double measureLimit(BotApiSimulator simulator, String token, int sends) throws Exception {
        HttpClient http = HttpClient.newHttpClient();
        URI send = URI.create(simulator.url() + "/bot" + token + "/sendMessage");
        long gap = TimeUnit.SECONDS.toNanos(1) / PER_BOT;
        long start = System.nanoTime();
        int accepted = 0;
        for (int i = 0; i < sends; i++) {
            long wait = start + i * gap - System.nanoTime();
            if (wait > 0) {
                TimeUnit.NANOSECONDS.sleep(wait);
            }
            String body = "{\"chat_id\":" + (500_000 + i) + ",\"text\":\"limit\"}";
            HttpResponse<String> answer = http.send(HttpRequest.newBuilder(send).header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
            if (answer.statusCode() == 200) {
                accepted++;
            }
        }
        return accepted / ((System.nanoTime() - start) / 1e9);
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
