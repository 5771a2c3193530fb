package io.chatintake.channel.telegram;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.sim.BotApiSimulator;
import io.chatintake.sim.InboxAudit;
import io.chatintake.store.EmbeddedDatabase;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.nio.file.Path;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code telegram pause --bot main} under load with two runners (the real jar) on one database:
 * from 2 s after the pause neither runner calls getUpdates for the bot while updates keep queuing
 * at Telegram, and after {@code telegram resume} every update is stored once, from an offset that
 * went on where it stopped.
 */
class TelegramPauseIT {
    private static final Duration WAIT = Duration.ofSeconds(90);
    private static final long BOT = 778;
    /** Every replica obeys a pause or a resume within this. */
    private static final Duration OBEYED = Duration.ofSeconds(2);

    @TempDir
    Path work;

    @Test
    void aPausedBotIsNotPolledByAnyRunnerAndAfterResumeEveryUpdateIsStoredOnceFromAContinuousOffset() throws Exception {
        EmbeddedDatabase database = EmbeddedDatabase.start(work.resolve("shared-pg"), RunnerProcess.freePort(), false);
        ScheduledExecutorService feeder = Executors.newSingleThreadScheduledExecutor();
        try (BotApiSimulator simulator = BotApiSimulator.start()) {
            DataSource db = Sql.dataSource(database);
            simulator.setAudit(new InboxAudit(db));
            String token = simulator.addBot(BOT, "FAKE-pause-test-token-secret", "pause_test_bot");
            Map<String, String> envA = env(work.resolve("a"), simulator, token, database);
            Map<String, String> envB = env(work.resolve("b"), simulator, token, database);
            try (RunnerProcess a = RunnerProcess.start(work.resolve("a"), envA).awaitReady();
                 RunnerProcess b = RunnerProcess.start(work.resolve("b"), envB).awaitReady()) {
                AtomicInteger sent = new AtomicInteger();
                // About 100 updates a second over 5 chats, until the end.
                feeder.scheduleAtFixedRate(() -> simulator.enqueueText(token, 1 + sent.get() % 5, "load " + sent.incrementAndGet()),
                        0, 10, TimeUnit.MILLISECONDS);
                Await.until("updates flowing into the store", WAIT, () -> stored(db) >= 200);

                RunnerProcess pause = RunnerProcess.start(work.resolve("pause"), envA, "telegram", "pause", "--bot", "main", "--by", "it");
                assertThat(pause.awaitExit(WAIT)).as(pause.output()).isZero();
                assertThat(pause.output()).containsPattern("telegram bot main paused by it \\(next offset \\d+\\): no getUpdates until"
                        + " `telegram resume --bot main`");
                Instant pausedAt = ((Timestamp) Sql.rows(db, "SELECT paused_at FROM operator_pause").get(0).get(0)).toInstant();
                Instant obeyed = pausedAt.plus(OBEYED);
                int queuedThen = simulator.queued(token);
                // A bounded window that ends on what shows it was a real one: both runners saw the pause, and for 3 s
                // past the 2 s updates kept coming in at Telegram.
                Await.until("both runners paused, 3 s of load past the 2 s", WAIT, () -> a.output().contains("telegram bot 'main' is paused")
                        && b.output().contains("telegram bot 'main' is paused") && Instant.now().isAfter(obeyed.plusSeconds(3))
                        && simulator.queued(token) >= queuedThen + 200);

                assertThat(getUpdates(simulator)).as("no getUpdates from 2 s after the pause").noneMatch(r -> r.at().isAfter(obeyed));
                assertThat(Sql.count(db, "SELECT count(*) FROM telegram_update WHERE received_at > '" + obeyed + "'::timestamptz"))
                        .as("nothing stored").isZero();
                long offsetWhilePaused = Sql.count(db, "SELECT next_offset FROM telegram_checkpoint");
                assertThat(offsetWhilePaused).as("the offset where the last batch left it")
                        .isEqualTo(Sql.count(db, "SELECT max(update_id) + 1 FROM telegram_update"));

                RunnerProcess resume = RunnerProcess.start(work.resolve("resume"), envA, "telegram", "resume", "--bot", "main", "--by", "it");
                assertThat(resume.awaitExit(WAIT)).as(resume.output()).isZero();
                Instant resumed = Instant.now();
                assertThat(resume.output()).contains("telegram bot main resumed by it (paused by it since ");
                Await.until("polling again", WAIT, () -> getUpdates(simulator).stream().anyMatch(r -> r.at().isAfter(obeyed)));
                BotApiSimulator.Request first = getUpdates(simulator).stream().filter(r -> r.at().isAfter(obeyed)).findFirst().orElseThrow();
                assertThat(first.at()).as("polling within 2 s of the resume").isBefore(resumed.plus(OBEYED));
                assertThat(first.offset()).as("from the offset the pause left").isEqualTo(offsetWhilePaused);

                feeder.shutdownNow();
                feeder.awaitTermination(10, TimeUnit.SECONDS);
                int total = sent.get();
                Await.until("every update stored", WAIT, () -> stored(db) == total && simulator.queued(token) == 0);
            } finally {
                feeder.shutdownNow();
            }
            assertThat(Sql.rows(db, "SELECT count(*), count(DISTINCT update_id), max(update_id) - min(update_id) + 1 FROM telegram_update"))
                    .as("every update stored once, no id missing").allMatch(row -> row.get(0).equals(row.get(1)) && row.get(1).equals(row.get(2)));
            assertThat(Sql.count(db, "SELECT count(*) FROM telegram_gap")).isZero();
            List<Long> offsets = getUpdates(simulator).stream().map(BotApiSimulator.Request::offset).toList();
            assertThat(offsets).as("offsets only go forward").isSorted();
            assertThat(simulator.maxConcurrentPolls(token)).isEqualTo(1);
            assertThat(simulator.violations()).as("every update confirmed was stored first").isEmpty();
            assertThat(Sql.rows(db, "SELECT acted_by, action, target FROM operator_action ORDER BY id")).containsExactly(
                    List.of("it", "pause-bot", "telegram bot main"), List.of("it", "resume-bot", "telegram bot main"));
        } finally {
            database.close();
        }
    }

    private static Map<String, String> env(Path dir, BotApiSimulator simulator, String token, EmbeddedDatabase database) {
        Map<String, String> env = RunnerProcess.pollingEnv(dir, simulator.url(), token);
        env.put("CHAT_INTAKE_DB_URL", database.jdbcUrl());
        env.put("CHAT_INTAKE_DB_USER", database.user());
        env.put("CHAT_INTAKE_DB_PASSWORD", database.password().reveal());
        return env;
    }

    private static long stored(DataSource db) {
        return Sql.count(db, "SELECT count(*) FROM telegram_update");
    }

    private static List<BotApiSimulator.Request> getUpdates(BotApiSimulator simulator) {
        return simulator.requests().stream().filter(r -> r.method().equals("getUpdates") && r.botId() == BOT).toList();
    }
}
