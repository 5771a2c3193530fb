package io.chatintake.work;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.sim.BotApiSimulator;
import io.chatintake.store.EmbeddedDatabase;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.ClusterTemplate;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.nio.file.Files;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The dispatcher in real processes: replies through the guard, kill -9 mid-handler, two dispatchers sharing work. */
class WorkDispatchIT {
    private static final Duration WAIT = Duration.ofSeconds(120);

    @TempDir
    Path work;
    private BotApiSimulator simulator;
    private String token;

    @BeforeEach
    void startSimulator() {
        simulator = BotApiSimulator.start();
        token = simulator.addBot(888, "FAKE-work-test-token", "work_test_bot");
    }

    @AfterEach
    void stopSimulator() {
        simulator.close();
    }

    private Map<String, String> env(Path dir, Path routes) {
        Map<String, String> env = RunnerProcess.pollingEnv(dir, simulator.url(), token);
        env.put("CHAT_INTAKE_ROUTES_DIR", routes.toString());
        // A dead runner's claims are released through its silent heartbeat (seconds), not by expiry;
        // a claim this long is never lost by a live runner on a loaded machine.
        env.put("WORK_CLAIM_SECONDS", "30");
        env.put("WORK_BACKOFF_BASE_MILLIS", "200");
        return env;
    }

    @Test
    void theShippedEchoHandlerRepliesOncePerUpdate() throws Exception {
        Map<String, String> env = ClusterTemplate.seed(env(work, Path.of("routes").toAbsolutePath()));
        env.put("TELEGRAM_ECHO_REPLIES", "true");
        // Queued before the first poll: that poll names the types the bot takes (allowed_updates,
        // sticky), and Telegram withholds a type left out, as a brand-new one always is.
        simulator.enqueueText(token, 42, "hello");
        simulator.enqueueText(token, 43, "bonjour");
        simulator.enqueueUnknownType(token, "not_a_message");
        try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
            Await.until("condition", WAIT, () -> simulator.sentMessages(token).size() == 2 && simulator.queued(token) == 0);
            DataSource db = RunnerProcess.embeddedDatabase(env);
            Await.until("condition", WAIT, () -> Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'done'") == 3);
            // Two chats: no order between them is promised (the send limiter spaces a bot's sends).
            assertThat(simulator.sentMessages(token)).extracting(m -> m.path("chat_id").asLong() + " " + m.path("text").asText())
                    .containsExactlyInAnyOrder("42 Received: hello", "43 Received: bonjour");
            assertThat(Sql.count(db, "SELECT count(*) FROM outbound_effect WHERE state = 'done'")).isEqualTo(2);
            assertThat(runner.output()).doesNotContain("FAKE-work-test-token");
        }
    }

    @Test
    void aKill9BetweenTheReplyAndItsRecordParksTheItemInsteadOfReplyingTwice() throws Exception {
        Path routes = Files.createDirectories(work.resolve("routes"));
        Files.copy(Path.of("routes/telegram.yaml"), routes.resolve("telegram.yaml"));
        Files.writeString(routes.resolve("slow-handler.yaml"), """
                - route:
                    id: telegram-update
                    from:
                      uri: "work:telegram-update"
                      steps:
                        - setHeader:
                            name: EffectName
                            constant: reply
                        - bean: { ref: effectGuard, method: begin }
                        - setHeader:
                            name: CamelTelegramChatId
                            simple: "${header.TelegramChatId}"
                        - setBody:
                            simple: "reply to ${header.TelegramUpdateId}"
                        - toD: { uri: "telegram:bots" }
                        - delay: { constant: "5000" }
                        - bean: { ref: effectGuard, method: complete }
                """);
        Map<String, String> env = ClusterTemplate.seed(env(work, routes));
        DataSource db = RunnerProcess.embeddedDatabase(env);
        RunnerProcess first = RunnerProcess.start(work, env).awaitReady();
        simulator.enqueueText(token, 7, "please answer once");
        Await.until("condition", WAIT, () -> simulator.sentMessages(token).size() == 1);
        first.kill9();

        try (RunnerProcess second = RunnerProcess.start(work, env).awaitReady()) {
            Await.until("condition", WAIT, () -> "parked".equals(Sql.string(db, "SELECT state FROM work_item")));
            assertThat(Sql.string(db, "SELECT last_error FROM work_item")).contains("888:1:reply was started but never recorded done");
            assertThat(simulator.sentMessages(token)).hasSize(1);

            RunnerProcess status = RunnerProcess.start(work.resolve("status"), env, "work", "status");
            assertThat(status.awaitExit(WAIT)).as(status.output()).isZero();
            assertThat(status.output()).contains("telegram-update    parked   1").contains("888:1:reply (work item");
        }
        assertThat(simulator.sentMessages(token)).hasSize(1);
    }

    @Test
    void twoDispatcherProcessesHandleFiveThousandItemsExactlyOnce() throws Exception {
        int dbPort = RunnerProcess.freePort();
        EmbeddedDatabase database = ClusterTemplate.start(work.resolve("shared-pg"), dbPort, false);
        DataSource db = Sql.dataSource(database);
        Path routes = Files.createDirectories(work.resolve("routes"));
        Files.writeString(routes.resolve("ledger.yaml"), """
                - route:
                    id: telegram-update
                    from:
                      uri: "work:telegram-update"
                      steps:
                        - to: "sql:INSERT INTO handled_log (work_key, runner) VALUES (:#${header.IdempotencyKey}, :#${sysenv.RUNNER_NAME})"
                """);
        Map<String, String> envA = env(work.resolve("a"), routes);
        Map<String, String> envB = env(work.resolve("b"), routes);
        for (Map<String, String> env : List.of(envA, envB)) {
            env.remove("TELEGRAM_BOT_TOKEN");
            env.put("CHAT_INTAKE_DB_URL", database.jdbcUrl());
            env.put("CHAT_INTAKE_DB_USER", database.user());
            env.put("CHAT_INTAKE_DB_PASSWORD", database.password().reveal());
        }
        envA.put("RUNNER_NAME", "a");
        envB.put("RUNNER_NAME", "b");
        // Both started at once, each starting while the other does; neither has work before it is scheduled.
        try (RunnerProcess a = RunnerProcess.start(work.resolve("a"), envA);
             RunnerProcess b = RunnerProcess.start(work.resolve("b"), envB)) {
            a.awaitReady();
            b.awaitReady();
            Sql.execute(db, "CREATE TABLE handled_log (work_key text NOT NULL, runner text NOT NULL)");
            Sql.execute(db, """
                    INSERT INTO telegram_update (bot_id, update_id, update_type, payload)
                    SELECT 1, n, 'message', jsonb_build_object('update_id', n, 'message', jsonb_build_object('chat', jsonb_build_object('id', n % 50)))
                      FROM generate_series(1, 5000) AS n""");
            scheduleStoredUpdates(db, 50);
            Await.until("condition", WAIT, () -> Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'done'") == 5000);
            assertThat(Sql.count(db, "SELECT count(*) FROM handled_log")).isEqualTo(5000);
            assertThat(Sql.count(db, "SELECT count(DISTINCT work_key) FROM handled_log")).isEqualTo(5000);
            assertThat(Sql.count(db, "SELECT count(DISTINCT runner) FROM handled_log")).as("both processes took work").isEqualTo(2);
        } finally {
            database.close();
        }
    }

    /** Schedules every stored update as work through the queue (as intake does), chat = update id modulo {@code chats}. */
    private static void scheduleStoredUpdates(DataSource db, int chats) throws Exception {
        List<WorkQueue.NewWork> work = new ArrayList<>();
        try (Connection c = db.getConnection()) {
            c.setAutoCommit(false);
            try (PreparedStatement ps = c.prepareStatement("SELECT id, update_id FROM telegram_update ORDER BY id");
                 ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    work.add(new WorkQueue.NewWork("telegram-update", "1:" + rs.getLong(2), rs.getLong(1), "1:" + rs.getLong(2) % chats));
                }
            }
            WorkQueue.schedule(c, work);
            c.commit();
        }
    }

    private Map<String, String> sharedDatabaseEnv(EmbeddedDatabase database, Path dir, Path routes, String name) {
        Map<String, String> env = env(dir, routes);
        env.remove("TELEGRAM_BOT_TOKEN");
        env.put("CHAT_INTAKE_DB_URL", database.jdbcUrl());
        env.put("CHAT_INTAKE_DB_USER", database.user());
        env.put("CHAT_INTAKE_DB_PASSWORD", database.password().reveal());
        env.put("RUNNER_NAME", name);
        return env;
    }

    @Test
    void afterAKill9TheRunnerAlreadyRunningTakesOverEveryChatWithinSecondsAndNoItemRunsTwice() throws Exception {
        int dbPort = RunnerProcess.freePort();
        EmbeddedDatabase database = ClusterTemplate.start(work.resolve("shared-pg"), dbPort, false);
        DataSource db = Sql.dataSource(database);
        Path routes = Files.createDirectories(work.resolve("routes"));
        // The ledger counts each item's handling inside the effect guard: an item run twice would count twice.
        Files.writeString(routes.resolve("ledger.yaml"), """
                - route:
                    id: telegram-update
                    from:
                      uri: "work:telegram-update"
                      steps:
                        - bean: { ref: effectGuard, method: begin }
                        - to: "sql:INSERT INTO handled_log (work_key, runner) VALUES (:#${header.IdempotencyKey}, :#${sysenv.RUNNER_NAME})"
                        - delay: { constant: "50" }
                        - bean: { ref: effectGuard, method: complete }
                """);
        Map<String, String> envA = sharedDatabaseEnv(database, work.resolve("a"), routes, "a");
        Map<String, String> envB = sharedDatabaseEnv(database, work.resolve("b"), routes, "b");
        for (Map<String, String> env : List.of(envA, envB)) {
            // Takeover must come from the heartbeat: the claim itself would last two minutes.
            env.put("WORK_CLAIM_SECONDS", "120");
            env.put("WORK_HEARTBEAT_SECONDS", "1");
            env.put("WORK_DEAD_AFTER_HEARTBEATS", "3");
            env.put("WORK_RUN_SIZE", "5");
        }
        envA.put("WORK_CONCURRENCY", "10");
        envB.put("WORK_CONCURRENCY", "2");
        try (RunnerProcess a = RunnerProcess.start(work.resolve("a"), envA);
             RunnerProcess b = RunnerProcess.start(work.resolve("b"), envB)) {
            a.awaitReady();
            b.awaitReady();
            Sql.execute(db, "CREATE TABLE handled_log (seq bigserial, work_key text NOT NULL, runner text NOT NULL,"
                    + " handled_at timestamptz NOT NULL DEFAULT clock_timestamp())");
            Sql.execute(db, """
                    INSERT INTO telegram_update (bot_id, update_id, update_type, payload)
                    SELECT 1, n, 'message', jsonb_build_object('update_id', n, 'message', jsonb_build_object('chat', jsonb_build_object('id', n % 10)))
                      FROM generate_series(1, 600) AS n""");
            scheduleStoredUpdates(db, 10);
            String lanesOfA = "SELECT count(*) FROM work_lane WHERE claimed_by LIKE '%:" + a.pid() + ":%'";
            // 7 while it runs, so that it still holds 5 at the kill: its runs end and begin all the time.
            // One look gives the condition and the time, and the kill follows it at once: a second
            // query in between left a's runs time to end, and it held 4 on a busy machine.
            String midWork = "SELECT CASE WHEN (SELECT count(*) FROM handled_log WHERE runner = 'a') >= 100 AND (" + lanesOfA
                    + ") >= 7 THEN now()::text END";
            AtomicReference<String> seenAt = new AtomicReference<>();
            Await.until("a mid-work on most chats", WAIT, () -> {
                seenAt.set(Sql.string(db, midWork));
                return seenAt.get() != null;
            });
            a.kill9();
            String killedAt = seenAt.get();
            // What a held when it died: nothing changes its lanes until b finds it silent (3 heartbeats).
            long chatsOfA = Sql.count(db, lanesOfA);

            Await.until("all 600 items finished", WAIT, () -> Sql.count(db, "SELECT count(*) FROM work_item WHERE state IN ('done', 'parked')") == 600);
            // Every chat with work left at the kill had an item handled by b within 15 s of it.
            String slowestTakeover = Sql.string(db, """
                    SELECT round(extract(epoch FROM max(first_after - timestamptz '%s'))::numeric, 1) FROM (
                        SELECT w.chat_key, min(h.handled_at) AS first_after
                          FROM handled_log h JOIN work_item w ON w.source_key = h.work_key
                         WHERE h.runner = 'b' AND h.handled_at > '%s'
                         GROUP BY w.chat_key) t""".formatted(killedAt, killedAt));
            System.out.println("slowest chat taken over " + slowestTakeover + " s after the kill");
            long chatsTakenOver = Sql.count(db, "SELECT count(DISTINCT w.chat_key) FROM handled_log h JOIN work_item w ON w.source_key = h.work_key"
                    + " WHERE h.runner = 'b' AND h.handled_at > '" + killedAt + "'");
            assertThat(chatsOfA).isGreaterThanOrEqualTo(5);
            assertThat(chatsTakenOver).as("chats b worked on after the kill").isEqualTo(10);
            assertThat(Double.parseDouble(slowestTakeover)).as("seconds until b handled the last chat it took over").isLessThanOrEqualTo(15.0);
            assertThat(Sql.count(db, "SELECT count(*) - count(DISTINCT work_key) FROM handled_log")).as("items run twice").isZero();
            assertThat(Sql.count(db, "SELECT count(*) FROM handled_log")).isBetween(590L, 600L);
            // Items a was running at the kill are parked for reconciliation (their effect started, never recorded done).
            assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'parked'")).isBetween(0L, 10L);
            assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'parked' AND last_error NOT LIKE '%never recorded done%'")).isZero();
            String outOfOrder = Sql.string(db, """
                    SELECT count(*) FROM (
                        SELECT w.id, lag(w.id) OVER (PARTITION BY w.chat_key ORDER BY h.seq) AS previous
                          FROM handled_log h JOIN work_item w ON w.source_key = h.work_key) t
                     WHERE previous > id""");
            assertThat(outOfOrder).as("items handled out of their chat's order").isEqualTo("0");
            assertThat(b.output()).contains("claimed item(s) of process(es) silent for more than 3 s");
        } finally {
            database.close();
        }
    }
}
