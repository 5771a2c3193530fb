package io.chatintake.work;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.sim.BotApiSimulator;
import io.chatintake.store.EmbeddedDatabase;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
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
        env.put("WORK_CLAIM_SECONDS", "3");
        env.put("WORK_BACKOFF_BASE_MILLIS", "200");
        return env;
    }

    @Test
    void theShippedEchoHandlerRepliesOncePerUpdate() throws Exception {
        Map<String, String> env = env(work, Path.of("routes").toAbsolutePath());
        env.put("TELEGRAM_ECHO_REPLIES", "true");
        try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
            simulator.enqueueText(token, 42, "hello");
            simulator.enqueueText(token, 43, "bonjour");
            simulator.enqueueUnknownType(token, "not_a_message");
            Await.until("condition", WAIT, () -> simulator.sentMessages(token).size() == 2 && simulator.queued(token) == 0);
            DataSource db = RunnerProcess.embeddedDatabase(env);
            Await.until("condition", WAIT, () -> Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'done'") == 3);
            // Two chats: the workers may answer them in either order (order holds within a chat).
            assertThat(simulator.sentMessages(token)).extracting(m -> m.path("chat_id").asLong() + ":" + m.path("text").asText())
                    .containsExactlyInAnyOrder("42:Received: hello", "43:Received: bonjour");
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
                    id: telegram-update-handler
                    from:
                      uri: "direct:telegram-update"
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
        Map<String, String> env = env(work, routes);
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
        EmbeddedDatabase database = EmbeddedDatabase.start(work.resolve("shared-pg"), dbPort, false);
        DataSource db = Sql.dataSource(database.jdbcUrl(), database.user());
        Path routes = Files.createDirectories(work.resolve("routes"));
        Files.writeString(routes.resolve("ledger.yaml"), """
                - route:
                    id: telegram-update-handler
                    from:
                      uri: "direct:telegram-update"
                      steps:
                        - to: "sql:INSERT INTO handled_log (work_key, runner) VALUES (:#${header.IdempotencyKey}, :#${sysenv.RUNNER_NAME})"
                """);
        Map<String, String> envA = env(work.resolve("a"), routes);
        Map<String, String> envB = env(work.resolve("b"), routes);
        for (Map<String, String> env : List.of(envA, envB)) {
            env.remove("TELEGRAM_BOT_TOKEN");
            env.put("CHAT_INTAKE_DB_URL", database.jdbcUrl());
            env.put("CHAT_INTAKE_DB_USER", database.user());
        }
        envA.put("RUNNER_NAME", "a");
        envB.put("RUNNER_NAME", "b");
        try (RunnerProcess a = RunnerProcess.start(work.resolve("a"), envA).awaitReady()) {
            Sql.execute(db, "CREATE TABLE handled_log (work_key text NOT NULL, runner text NOT NULL)");
            Sql.execute(db, """
                    INSERT INTO telegram_update (bot_id, update_id, update_type, payload)
                    SELECT 1, n, 'message', jsonb_build_object('update_id', n, 'message', jsonb_build_object('chat', jsonb_build_object('id', n % 50)))
                      FROM generate_series(1, 5000) AS n""");
            try (RunnerProcess b = RunnerProcess.start(work.resolve("b"), envB).awaitReady()) {
                Sql.execute(db, """
                        INSERT INTO work_item (kind, source_key, source_id, chat_key)
                        SELECT 'telegram-update', '1:' || update_id, id, '1:' || (update_id % 50) FROM telegram_update""");
                Await.until("condition", WAIT, () -> Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'done'") == 5000);
                assertThat(Sql.count(db, "SELECT count(*) FROM handled_log")).isEqualTo(5000);
                assertThat(Sql.count(db, "SELECT count(DISTINCT work_key) FROM handled_log")).isEqualTo(5000);
                assertThat(Sql.count(db, "SELECT count(DISTINCT runner) FROM handled_log")).as("both processes took work").isEqualTo(2);
            }
        } finally {
            database.close();
        }
    }





}
