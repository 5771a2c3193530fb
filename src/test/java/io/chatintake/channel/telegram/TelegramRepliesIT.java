package io.chatintake.channel.telegram;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.chatintake.sim.BotApiSimulator;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The shipped echo handler replying through telegram-bot from 8 dispatcher threads, in the real
 * jar against the Bot API simulator. One runner serves both tests (they use disjoint chats).
 * The per-bot and per-chat send limits are raised here so that 2,500 replies take seconds, not
 * minutes (Telegram's own limits, the defaults, would hold 2,000 replies to over a minute).
 */
class TelegramRepliesIT {
    private static final Duration WAIT = Duration.ofSeconds(180);
    private static final long BOT = 889;

    private static Path work;
    private static BotApiSimulator simulator;
    private static String token;
    private static RunnerProcess runner;
    private static DataSource db;

    @BeforeAll
    static void startRunner() throws Exception {
        work = Files.createTempDirectory("telegram-replies-it");
        simulator = BotApiSimulator.start();
        token = simulator.addBot(BOT, "FAKE-replies-test-token", "replies_test_bot");
        Map<String, String> env = RunnerProcess.pollingEnv(work, simulator.url(), token);
        env.put("TELEGRAM_ECHO_REPLIES", "true");
        env.put("WORK_CONCURRENCY", "8");
        env.put("WORK_BACKOFF_BASE_MILLIS", "200");
        env.put("TELEGRAM_SEND_PER_BOT_PER_SECOND", "5000");
        env.put("TELEGRAM_SEND_PER_CHAT_PER_SECOND", "200");
        runner = RunnerProcess.start(work, env).awaitReady();
        db = RunnerProcess.embeddedDatabase(env);
    }

    @AfterAll
    static void stopRunner() {
        if (runner != null) {
            runner.close();
        }
        simulator.close();
    }

    @Test
    void twoThousandRepliesToTwoHundredChatsEachReachTheirOwnChatOnceInOrder() {
        Map<Long, List<String>> expected = enqueue(1, 200, 10);

        Await.until("2,000 replies sent", WAIT, () -> sentTo(1, 200).size() == 2000);
        Await.until("2,000 items done", WAIT, () -> count("done", 1, 200) == 2000);
        assertThat(byChat(sentTo(1, 200))).isEqualTo(expected);
        assertThat(attemptsTo(1, 200)).as("no send was retried").hasSize(2000);
        assertThat(count("parked", 1, 200) + count("failed", 1, 200)).isZero();
        assertThat(Sql.count(db, "SELECT count(*) FROM outbound_effect WHERE state = 'done' AND result ~ '^[0-9]+$'"
                + " AND effect_key LIKE '" + BOT + ":%:echo-reply'")).as("message ids recorded").isGreaterThanOrEqualTo(2000);
        assertThat(simulator.violations()).isEmpty();
    }

    @Test
    void rateLimitsAreWaitedOutAndABlockedChatEndsUndeliverableWithNothingParked() {
        long blocked = 1017;
        simulator.rateLimitSends(token, 0.05, 1);
        simulator.blockChat(token, blocked);
        try {
            Map<Long, List<String>> expected = enqueue(1001, 40, 10);
            expected.remove(blocked);

            Await.until("every item of the 40 chats finished", WAIT, () -> count("done", 1001, 40) == 400);
            assertThat(byChat(sentTo(1001, 40))).isEqualTo(expected);
            assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE outcome = 'undeliverable' AND chat_key = '" + BOT + ":" + blocked + "'"))
                    .isEqualTo(10);
            assertThat(Sql.count(db, "SELECT count(*) FROM outbound_effect WHERE state = 'undeliverable'")).isEqualTo(10);
            assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'parked'")).isZero();
            assertThat(Sql.count(db, "SELECT count(*) FROM outbound_effect WHERE state = 'started'")).isZero();
            long rateLimited = attemptsTo(1001, 40).size() - sentTo(1001, 40).size() - 10;
            assertThat(rateLimited).as("some sends were answered 429 and sent again").isPositive();
            assertThat(simulator.violations()).isEmpty();
        } finally {
            simulator.rateLimitSends(token, 0, 1);
        }
    }

    /** Enqueues {@code perChat} texts to each of {@code chats} chats from {@code firstChat}, interleaved; returns the expected replies. */
    private static Map<Long, List<String>> enqueue(long firstChat, int chats, int perChat) {
        Map<Long, List<String>> expected = new TreeMap<>();
        for (int m = 0; m < perChat; m++) {
            for (long chat = firstChat; chat < firstChat + chats; chat++) {
                String text = "chat " + chat + " message " + m;
                simulator.enqueueText(token, chat, text);
                expected.computeIfAbsent(chat, c -> new ArrayList<>()).add("Received: " + text);
            }
        }
        return expected;
    }

    private static List<JsonNode> sentTo(long firstChat, int chats) {
        return inRange(simulator.sentMessages(token), firstChat, chats);
    }

    private static List<JsonNode> attemptsTo(long firstChat, int chats) {
        return inRange(simulator.sendAttempts(token), firstChat, chats);
    }

    private static List<JsonNode> inRange(List<JsonNode> sends, long firstChat, int chats) {
        return sends.stream().filter(m -> m.path("chat_id").asLong() >= firstChat && m.path("chat_id").asLong() < firstChat + chats).toList();
    }

    private static Map<Long, List<String>> byChat(List<JsonNode> sends) {
        return sends.stream().collect(Collectors.groupingBy(m -> m.path("chat_id").asLong(), TreeMap::new,
                Collectors.mapping(m -> m.path("text").asText(), Collectors.toList())));
    }

    private static long count(String state, long firstChat, int chats) {
        return Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'telegram-update' AND state = '" + state + "'"
                + " AND split_part(chat_key, ':', 2)::bigint BETWEEN " + firstChat + " AND " + (firstChat + chats - 1));
    }
}
