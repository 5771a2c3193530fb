package io.chatintake.channel.telegram;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.sim.BotApiSimulator;
import io.chatintake.store.EmbeddedDatabase;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.ClusterTemplate;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The shipped echo handler answering through telegram-bot at its limits per bot and per chat, in
 * the real jar against the Bot API simulator enforcing the same. The limits are Telegram's (30 a
 * second per bot, one a second per chat) scaled by three: the same ratio of a busy chat to the bot,
 * in a third of the time. One runner serves the class; the second test starts a second one on the
 * same database.
 */
class ReplyLimitsIT {
    private static final Duration WAIT = Duration.ofMinutes(3);
    private static final long BOT = 893;
    private static final int PER_BOT = 90;
    private static final int PER_CHAT = 3;

    private static Path work;
    private static BotApiSimulator simulator;
    private static String token;
    private static EmbeddedDatabase database;
    private static DataSource db;
    private static RunnerProcess runner;

    @BeforeAll
    static void startRunner() throws Exception {
        work = Files.createTempDirectory("reply-limits-it");
        simulator = BotApiSimulator.start();
        token = simulator.addBot(BOT, "FAKE-limits-test-token", "limits_test_bot");
        database = ClusterTemplate.start(work.resolve("pg"), RunnerProcess.freePort(), false);
        db = Sql.dataSource(database);
        runner = RunnerProcess.start(work.resolve("a"), env("a")).awaitReady();
    }

    private static Map<String, String> env(String name) {
        Map<String, String> env = RunnerProcess.pollingEnv(work.resolve(name), simulator.url(), token);
        env.put("CHAT_INTAKE_DB_URL", database.jdbcUrl());
        env.put("CHAT_INTAKE_DB_USER", database.user());
        env.put("CHAT_INTAKE_DB_PASSWORD", database.password().reveal());
        env.put("TELEGRAM_ECHO_REPLIES", "true");
        env.put("TELEGRAM_SEND_PER_BOT_PER_SECOND", Integer.toString(PER_BOT));
        env.put("TELEGRAM_SEND_PER_CHAT_PER_SECOND", Integer.toString(PER_CHAT));
        // Two workers: ones that slept out each chat's slots would answer six texts a second, and
        // the 2,460 texts not within the wait.
        env.put("WORK_CONCURRENCY", "2");
        return env;
    }

    @AfterAll
    static void stop() {
        if (runner != null) {
            runner.close();
        }
        simulator.close();
        database.close();
    }

    @Test
    void aChatWithSixtyTextsHoldsUpNoneOfThreeHundredOthersAndEveryTextIsAnsweredOnceInOrder() {
        simulator.enforceSendLimits(token, PER_BOT, PER_CHAT);
        long busy = 1;
        Map<Long, List<String>> expected = new TreeMap<>();
        enqueue(expected, busy, 1, 60);
        enqueue(expected, 2, 300, 8);

        Await.until("the 300 ordinary chats answered", WAIT, () -> answered(2, 300) == 2400);
        Await.until("the busy chat answered", WAIT, () -> answered(busy, 1) == 60);

        List<BotApiSimulator.Send> sends = sendsTo(1, 301);
        assertThat(byChat(sends)).as("every text once, in order per chat").isEqualTo(expected);
        Await.until("every item done", WAIT, () -> Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'telegram-update'"
                + " AND state = 'done' AND split_part(chat_key, ':', 2)::bigint BETWEEN 1 AND 301") == 2460);
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'parked'")).isZero();
        assertThat(Sql.count(db, "SELECT max(attempts) FROM work_item")).as("waiting for a limit is no attempt").isEqualTo(1);
        assertThat(metric(runner, "chat_intake_work_deferrals_total", "reason=\"chat_limit\""))
                .as("the chats' limits were waited for in storage, not in a worker").isPositive();
        assertThat(simulator.refusedByLimits(token)).as("sends refused by Telegram's limits").isLessThan(sends.size() / 20);
        assertThat(simulator.violations()).isEmpty();
    }

    @Test
    void twoRunnersSharingABotNeverSendMoreThanItsLimitInAnySecond() {
        // Only counted here, not refused: a refusal would hide a second above the limit.
        simulator.enforceSendLimits(token, Integer.MAX_VALUE, 1000);
        try (RunnerProcess second = RunnerProcess.start(work.resolve("b"), env("b")).awaitReady()) {
            Map<Long, List<String>> expected = new TreeMap<>();
            enqueue(expected, 1001, 200, 3);

            Await.until("600 replies", WAIT, () -> answered(1001, 200) == 600);
            List<BotApiSimulator.Send> sends = sendsTo(1001, 200);
            assertThat(byChat(sends)).isEqualTo(expected);
            assertThat(BotApiSimulator.mostSendsInOneSecond(sends)).as("sends of the bot in any one second").isLessThanOrEqualTo(PER_BOT);
            assertThat(metric(runner, "chat_intake_telegram_sends_total", "result=\"sent\"")).as("the first runner sent").isPositive();
            assertThat(metric(second, "chat_intake_telegram_sends_total", "result=\"sent\"")).as("the second runner sent").isPositive();
        }
        assertThat(simulator.violations()).isEmpty();
    }

    /** Enqueues {@code perChat} texts to each of {@code chats} chats from {@code firstChat}, interleaved. */
    private static void enqueue(Map<Long, List<String>> expected, long firstChat, int chats, int perChat) {
        for (int m = 0; m < perChat; m++) {
            for (long chat = firstChat; chat < firstChat + chats; chat++) {
                String text = "chat " + chat + " message " + m;
                simulator.enqueueText(token, chat, text);
                expected.computeIfAbsent(chat, c -> new ArrayList<>()).add("Received: " + text);
            }
        }
    }

    private static long answered(long firstChat, int chats) {
        return sendsTo(firstChat, chats).size();
    }

    private static List<BotApiSimulator.Send> sendsTo(long firstChat, int chats) {
        return simulator.sends(token).stream().filter(s -> s.chatId() >= firstChat && s.chatId() < firstChat + chats).toList();
    }

    private static Map<Long, List<String>> byChat(List<BotApiSimulator.Send> sends) {
        return sends.stream().collect(Collectors.groupingBy(BotApiSimulator.Send::chatId, TreeMap::new,
                Collectors.mapping(BotApiSimulator.Send::text, Collectors.toList())));
    }

    /** The sum of a Prometheus counter's series whose labels contain {@code label}. */
    private static double metric(RunnerProcess process, String name, String label) {
        Matcher m = Pattern.compile("(?m)^" + name + "\\{([^}]*)\\} (\\S+)$").matcher(process.get("/observe/metrics").body());
        double sum = 0;
        while (m.find()) {
            if (m.group(1).contains(label)) {
                sum += Double.parseDouble(m.group(2));
            }
        }
        return sum;
    }
}
