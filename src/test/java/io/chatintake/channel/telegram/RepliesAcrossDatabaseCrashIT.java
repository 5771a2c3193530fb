package io.chatintake.channel.telegram;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.chatintake.sim.BotApiSimulator;
import io.chatintake.store.EmbeddedDatabase;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * PostgreSQL crashes (SIGQUIT to the postmaster: an immediate shutdown, as {@code pg_ctl stop -m
 * immediate}) while the shipped echo handler sends replies, and comes back 6 s later. The runner
 * holds what it knows: replies in flight at the crash, performed while the database is away, are
 * recorded performed when it is back (kept, then written), so nothing is parked for
 * reconciliation and nothing is sent twice.
 */
class RepliesAcrossDatabaseCrashIT {
    private static final Duration WAIT = Duration.ofMinutes(4);
    private static final long BOT = 897;
    private static final int CHATS = 40;
    private static final int PER_CHAT = 25;

    @Test
    void repliesSentAroundACrashAreRecordedPerformedNoneParkedNoneSentTwice() throws Exception {
        Path work = Files.createTempDirectory("replies-crash-it");
        int port = RunnerProcess.freePort();
        Path pg = work.resolve("pg");
        EmbeddedDatabase database = EmbeddedDatabase.start(pg, port, true);
        try (BotApiSimulator simulator = BotApiSimulator.start()) {
            String token = simulator.addBot(BOT, "FAKE-crash-test-token", "crash_test_bot");
            Map<String, String> env = RunnerProcess.pollingEnv(work, simulator.url(), token);
            env.put("CHAT_INTAKE_DB_URL", database.jdbcUrl());
            env.put("CHAT_INTAKE_DB_USER", database.user());
            env.put("CHAT_INTAKE_DB_PASSWORD", database.password().reveal());
            env.put("TELEGRAM_ECHO_REPLIES", "true");
            env.put("TELEGRAM_SEND_PER_BOT_PER_SECOND", "300");
            env.put("TELEGRAM_SEND_PER_CHAT_PER_SECOND", "100");
            DataSource db = Sql.dataSource(database);
            try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
                for (int m = 0; m < PER_CHAT; m++) {
                    for (long chat = 1; chat <= CHATS; chat++) {
                        simulator.enqueueText(token, chat, "chat " + chat + " text " + m);
                    }
                }
                Await.until("replies being sent", WAIT, () -> simulator.sentMessages(token).size() >= 150);

                // Sends in flight at the crash: the runner has started their effects, and learns that they
                // were performed only once the database is gone.
                simulator.holdSends(token);
                Await.until("a reply in flight", WAIT, () -> simulator.heldSends(token) > 0);
                long postmaster = database.serverProcess().orElseThrow().pid();
                new ProcessBuilder("kill", "-QUIT", Long.toString(postmaster)).inheritIO().start().waitFor();
                Await.until("PostgreSQL down", WAIT, () -> ProcessHandle.of(postmaster).map(p -> !p.isAlive()).orElse(true));
                int sentWhileDown = simulator.sentMessages(token).size();
                int inFlight = simulator.heldSends(token);
                simulator.releaseSends(token);
                Await.until("the replies in flight performed while PostgreSQL is down", WAIT,
                        () -> simulator.sentMessages(token).size() >= sentWhileDown + inFlight);
                database.close(); // releases this JVM's lock on the data directory; the server is gone already
                Await.throughout("the runner up through the outage", Duration.ofSeconds(6), runner::isAlive);
                database = EmbeddedDatabase.start(pg, port, true);

                Await.until("every text answered", WAIT, () -> simulator.sentMessages(token).size() >= CHATS * PER_CHAT);
                Await.until("every item done", WAIT, () -> Sql.count(db,
                        "SELECT count(*) FROM work_item WHERE kind = 'telegram-update' AND state = 'done'") == CHATS * PER_CHAT);
                List<String> texts = simulator.sentMessages(token).stream().map(m -> m.path("text").asText()).toList();
                assertThat(texts).as("none sent twice").doesNotHaveDuplicates().hasSize(CHATS * PER_CHAT);
                assertThat(byChatInOrder(simulator.sentMessages(token))).as("in order per chat").isTrue();
                assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'parked'")).as("none parked").isZero();
                assertThat(Sql.count(db, "SELECT count(*) FROM outbound_effect WHERE state = 'started'")).isZero();
                assertThat(Sql.count(db, "SELECT count(*) FROM outbound_effect WHERE state = 'done' AND result ~ '^[0-9]+$'"))
                        .as("every reply sent, before the crash or after, recorded performed with its message id")
                        .isEqualTo(CHATS * PER_CHAT);
                assertThat(sentWhileDown).as("the crash came while replies were going out").isLessThan(CHATS * PER_CHAT);
            }
        } finally {
            database.close();
        }
    }

    private static boolean byChatInOrder(List<JsonNode> sent) {
        Map<Long, List<Integer>> byChat = sent.stream().collect(Collectors.groupingBy(m -> m.path("chat_id").asLong(),
                Collectors.mapping(m -> Integer.parseInt(m.path("text").asText().replaceAll(".* text ", "")), Collectors.toList())));
        return byChat.values().stream().allMatch(texts -> texts.equals(texts.stream().sorted().toList()));
    }
}
