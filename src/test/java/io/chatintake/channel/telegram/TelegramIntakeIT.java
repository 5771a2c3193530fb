package io.chatintake.channel.telegram;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.support.CrashPoint;
import io.chatintake.sim.BotApiSimulator;
import io.chatintake.sim.InboxAudit;
import io.chatintake.store.EmbeddedDatabase;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.ClusterTemplate;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The real jar, the Bot API simulator and PostgreSQL: crashes, chaos, outages, two processes. */
class TelegramIntakeIT {
    private static final Duration WAIT = Duration.ofSeconds(90);
    private static final String SECRET = "FAKE-jar-test-token-secret-part";

    @TempDir
    Path work;
    private BotApiSimulator simulator;
    private String token;

    @BeforeEach
    void startSimulator() {
        simulator = BotApiSimulator.start();
        token = simulator.addBot(777, SECRET, "jar_test_bot");
    }

    @AfterEach
    void stopSimulator() {
        simulator.close();
    }

    private Map<String, String> env(Path dir) {
        Map<String, String> env = RunnerProcess.pollingEnv(dir, simulator.url(), token);
        env.put("TELEGRAM_BACKOFF_CAP_MILLIS", "1000");
        env.put("CHAT_INTAKE_DB_CONNECT_TIMEOUT_SECONDS", "2");
        return env;
    }


    @Test
    void aRefusedTokenShowsAsStoppedOnHealthWhileReadinessAndLivenessStayUp() throws Exception {
        Map<String, String> env = ClusterTemplate.seed(RunnerProcess.pollingEnv(work, simulator.url(), "999:FAKE-refused-token-secret"));
        try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
            Await.until("the bot shows as stopped", WAIT, () -> runner.get("/observe/health").body().contains("stopped: unauthorized"));
            HttpResponse<String> health = runner.get("/observe/health");
            HttpResponse<String> ready = runner.get("/observe/health/ready");
            HttpResponse<String> live = runner.get("/observe/health/live");
            assertThat(health.statusCode()).as("the whole picture is down: one bot cannot poll").isEqualTo(503);
            assertThat(health.body()).contains("telegram-bot-main").contains("fix TELEGRAM_BOT_TOKEN")
                    .contains("webhook-unifyport").contains("off: no signing secret configured (UNIFYPORT_SIGNING_SECRETS)")
                    .doesNotContain("FAKE-refused-token-secret");
            assertThat(ready.statusCode()).as(ready.body()).isEqualTo(200);
            assertThat(ready.body()).doesNotContain("telegram-bot-main");
            assertThat(live.statusCode()).as(live.body()).isEqualTo(200);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {CrashPoint.TELEGRAM_AFTER_RECEIVE, CrashPoint.TELEGRAM_DURING_TRANSACTION, CrashPoint.TELEGRAM_AFTER_COMMIT})
    void eachCrashBoundaryResumesWithNothingLostAndNoDuplicate(String crashPoint) throws Exception {
        Map<String, String> env = ClusterTemplate.seed(env(work));
        DataSource db = RunnerProcess.embeddedDatabase(env);
        simulator.setAudit(new InboxAudit(db));
        for (int i = 0; i < 5; i++) {
            simulator.enqueueText(token, 11, "crash test " + i);
        }
        Map<String, String> crashing = new HashMap<>(env);
        crashing.put("CHAT_INTAKE_TEST_CRASH_AT", crashPoint);
        RunnerProcess crashed = RunnerProcess.start(work, crashing);
        assertThat(crashed.awaitExit(WAIT)).as(crashed.output()).isEqualTo(137);
        assertThat(crashed.output()).contains("crash point " + crashPoint + " reached");

        // The orphaned postgres still runs: look at what survived the crash.
        boolean committed = crashPoint.equals(CrashPoint.TELEGRAM_AFTER_COMMIT);
        assertThat(Sql.count(db, "SELECT count(*) FROM telegram_update")).isEqualTo(committed ? 5 : 0);
        assertThat(Sql.count(db, "SELECT next_offset FROM telegram_checkpoint")).isEqualTo(committed ? 6 : 0);
        assertThat(simulator.queued(token)).as("nothing confirmed to Telegram yet").isEqualTo(5);
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'telegram-update'"))
                .as("killed before the stored batch was scheduled as work").isZero();

        try (RunnerProcess resumed = RunnerProcess.start(work, env).awaitReady()) {
            Await.until("condition", WAIT, () -> simulator.queued(token) == 0 && Sql.count(db, "SELECT count(*) FROM telegram_update") == 5);
            assertThat(Sql.count(db, "SELECT count(DISTINCT update_id) FROM telegram_update")).isEqualTo(5);
            assertThat(Sql.count(db, "SELECT next_offset FROM telegram_checkpoint")).isEqualTo(6);
            Await.until("each stored update handled as work", WAIT,
                    () -> Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'telegram-update' AND state = 'done'") == 5);
            assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'telegram-update'")).isEqualTo(5);
        }
        assertThat(simulator.violations()).isEmpty();
    }

    @Test
    void chaosTwentyThousandUpdatesThroughTwentyKills() throws Exception {
        Map<String, String> env = ClusterTemplate.seed(env(work));
        DataSource db = RunnerProcess.embeddedDatabase(env);
        simulator.setAudit(new InboxAudit(db));
        Random random = new Random(20_000);
        int kills = 0;
        for (int round = 0; round < 20; round++) {
            for (int i = 0; i < 1000; i++) {
                simulator.enqueueText(token, 100 + i % 13, "chaos " + round + "-" + i);
            }
            RunnerProcess runner = RunnerProcess.start(work, env);
            Await.throughout("the runner up until its kill", Duration.ofMillis(1500 + random.nextInt(2500)), runner::isAlive);
            runner.kill9();
            kills++;
        }
        try (RunnerProcess last = RunnerProcess.start(work, env).awaitReady()) {
            Await.until("condition", WAIT, () -> simulator.queued(token) == 0);
            assertThat(Sql.count(db, "SELECT count(*) FROM telegram_update")).isEqualTo(20_000);
            assertThat(Sql.count(db, "SELECT count(DISTINCT update_id) FROM telegram_update")).isEqualTo(20_000);
            assertThat(Sql.count(db, "SELECT next_offset FROM telegram_checkpoint")).isEqualTo(20_001);
            // Kills between a batch's commit and its scheduling leave it to the next lease holder.
            Await.until("every stored update handled as work", WAIT,
                    () -> Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'telegram-update' AND state = 'done'") == 20_000);
            assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'telegram-update'")).isEqualTo(20_000);
        }
        assertThat(kills).isGreaterThanOrEqualTo(20);
        assertThat(simulator.violations()).isEmpty();
    }

    @Test
    void aTenSecondDatabaseOutageAdvancesNothingAndLosesNothing() throws Exception {
        int dbPort = RunnerProcess.freePort();
        Path dbDir = work.resolve("external-pg");
        EmbeddedDatabase database = ClusterTemplate.start(dbDir, dbPort, false);
        Map<String, String> env = env(work);
        env.put("CHAT_INTAKE_DB_URL", database.jdbcUrl());
        env.put("CHAT_INTAKE_DB_USER", database.user());
        env.put("CHAT_INTAKE_DB_PASSWORD", database.password().reveal());
        DataSource db = Sql.dataSource(database);
        simulator.setAudit(new InboxAudit(db));
        try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
            for (int i = 0; i < 300; i++) {
                simulator.enqueueText(token, 5, "before " + i);
            }
            Await.until("condition", WAIT, () -> simulator.queued(token) == 0);

            database.close();
            for (int i = 0; i < 300; i++) {
                simulator.enqueueText(token, 5, "during " + i);
            }
            Await.throughout("nothing confirmed while the database is down", Duration.ofSeconds(10), () -> simulator.queued(token) == 300);
            assertThat(runner.get("/observe/health/ready").statusCode()).isEqualTo(503);
            assertThat(runner.output()).contains("storage failed, checkpoint not advanced");

            database = EmbeddedDatabase.start(dbDir, dbPort, false);
            Await.until("condition", WAIT, () -> simulator.queued(token) == 0);
            assertThat(Sql.count(db, "SELECT count(*) FROM telegram_update")).isEqualTo(600);
            assertThat(runner.get("/observe/health/ready").statusCode()).isEqualTo(200);
        } finally {
            database.close();
        }
        assertThat(simulator.violations()).isEmpty();
    }

    @Test
    void twoProcessesNeverPollTogetherAndAKilledHolderIsReplacedWithinTheLease() throws Exception {
        int dbPort = RunnerProcess.freePort();
        EmbeddedDatabase database = ClusterTemplate.start(work.resolve("shared-pg"), dbPort, false);
        DataSource db = Sql.dataSource(database);
        simulator.setAudit(new InboxAudit(db));
        Map<String, String> envA = env(work.resolve("a"));
        Map<String, String> envB = env(work.resolve("b"));
        for (Map<String, String> env : List.of(envA, envB)) {
            env.put("CHAT_INTAKE_DB_URL", database.jdbcUrl());
            env.put("CHAT_INTAKE_DB_USER", database.user());
            env.put("CHAT_INTAKE_DB_PASSWORD", database.password().reveal());
        }
        // Both started at once, each starting while the other does.
        try (RunnerProcess a = RunnerProcess.start(work.resolve("a"), envA);
             RunnerProcess b = RunnerProcess.start(work.resolve("b"), envB)) {
            a.awaitReady();
            b.awaitReady();
            for (int i = 0; i < 200; i++) {
                simulator.enqueueText(token, 21, "shared " + i);
            }
            Await.until("condition", WAIT, () -> simulator.queued(token) == 0);
            String holder = Sql.string(db, "SELECT holder FROM telegram_poll_lease");
            RunnerProcess active = holder.contains(":" + a.pid() + ":") ? a : b;
            RunnerProcess standby = active == a ? b : a;

            active.kill9();
            for (int i = 0; i < 50; i++) {
                simulator.enqueueText(token, 21, "after the kill " + i);
            }
            long killedAt = System.nanoTime();
            Await.until("condition", WAIT, () -> simulator.queued(token) == 0);
            assertThat(Duration.ofNanos(System.nanoTime() - killedAt)).isLessThan(Duration.ofSeconds(8 + 10));
            assertThat(Sql.string(db, "SELECT holder FROM telegram_poll_lease")).contains(":" + standby.pid() + ":");
        } finally {
            database.close();
        }
        assertThat(simulator.maxConcurrentPolls(token)).isEqualTo(1);
        assertThat(simulator.conflicts(token)).isZero();
        assertThat(simulator.violations()).isEmpty();
    }

    @Test
    void theTokenNeverReachesTheLogOrTheMetricsAndStatusReadsWithoutConfirming() throws Exception {
        Map<String, String> env = ClusterTemplate.seed(env(work));
        simulator.injectFault(token, BotApiSimulator.Fault.serverError());
        // Queued before the first poll: that poll names the types the bot takes (allowed_updates,
        // sticky), and Telegram withholds a type left out, as a brand-new one always is.
        simulator.enqueueText(token, 1, "hello");
        simulator.enqueueUnknownType(token, "brand_new_update");
        try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
            Await.until("condition", WAIT, () -> simulator.queued(token) == 0);
            Await.until("condition", WAIT, () -> runner.output().contains("telegram update 2 (brand_new_update)"));
            String metrics = runner.get("/observe/metrics").body();
            assertThat(metrics).contains("chat_intake_telegram_updates_stored_total{bot=\"main\"} 2.0");
            assertThat(metrics).doesNotContain(SECRET);

            int pollsBefore = (int) simulator.requests().stream().filter(r -> r.method().equals("getUpdates")).count();
            RunnerProcess status = RunnerProcess.start(work.resolve("status"), env, "telegram", "status");
            assertThat(status.awaitExit(WAIT)).as(status.output()).isZero();
            assertThat(status.output()).contains("bot main (id 777)").contains("next offset:          3")
                    .contains("updates stored:       2").contains("pending at Telegram:  0")
                    .contains("confirmed outside this store: none");
            assertThat(status.output()).doesNotContain(SECRET);
            assertThat(simulator.requests().subList(pollsBefore, simulator.requests().size()))
                    .filteredOn(r -> r.method().equals("getUpdates")).allMatch(r -> r.offset() == null || r.offset() <= 3);
            assertThat(runner.output()).doesNotContain(SECRET).contains("Bot API call failed (500");
        }
    }

    @Test
    void switchToPollingDeletesTheWebhookKeepingQueuedUpdates() {
        Map<String, String> env = env(work);
        simulator.setWebhook(token, "https://example.invalid/telegram");
        simulator.enqueueText(token, 1, "waiting for the switch");
        RunnerProcess command = RunnerProcess.start(work, env, "telegram", "switch-to-polling", "--bot", "main");
        assertThat(command.awaitExit(WAIT)).as(command.output()).isZero();
        assertThat(command.output()).contains("webhook removed, 1 pending update(s) kept");
        assertThat(simulator.queued(token)).isEqualTo(1);
        assertThat(simulator.requests()).noneMatch(r -> r.method().equals("getUpdates"));
    }



}
