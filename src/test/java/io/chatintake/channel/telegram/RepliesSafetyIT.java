package io.chatintake.channel.telegram;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.sim.BotApiSimulator;
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

/** Secrets never leak, a crash between a reply and its record is settled by a person, a second poller is refused. */
class RepliesSafetyIT {
    private static final Duration WAIT = Duration.ofSeconds(120);
    private static final String SIGNING_OLD = "whsec-old-Zk3v";
    private static final String SIGNING_NEW = "whsec-new-Pq9w";
    private static final String DB_PASSWORD = "db-pass-Hh2r";

    @TempDir
    Path work;
    private BotApiSimulator simulator;
    private String token;

    @BeforeEach
    void startSimulator() {
        simulator = BotApiSimulator.start();
        token = simulator.addBot(890, "FAKE-leak-token-Q7x", "safety_test_bot");
    }

    @AfterEach
    void stopSimulator() {
        simulator.close();
    }

    @Test
    void atDebugLevelNoSecretReachesTheOutputTheTablesWorkStatusOrTheMetrics() throws Exception {
        Path routes = Files.createDirectories(work.resolve("routes"));
        for (String shipped : List.of("telegram.yaml", "unifyport-webhook.yaml", "unifyport-handlers.yaml")) {
            Files.copy(Path.of("routes", shipped), routes.resolve(shipped));
        }
        // One handler fails inside camel-telegram (its error quotes the request URL, token included),
        // the other throws an exception whose message holds every secret.
        Files.writeString(routes.resolve("leaky-handlers.yaml"), """
                - route:
                    id: telegram-update
                    from:
                      uri: "work:telegram-update"
                      steps:
                        - choice:
                            when:
                              - simple: "${header.TelegramText} == 'stock'"
                                steps:
                                  - setHeader:
                                      name: CamelTelegramChatId
                                      simple: "${header.TelegramChatId}"
                                  - setBody:
                                      constant: "hello"
                                  - to: "telegram:bots"
                            otherwise:
                              steps:
                                - throwException:
                                    exceptionType: "java.lang.IllegalStateException"
                                    message: "leaking {{telegram.bot-token}} and {{unifyport.signing-secrets}} and {{chat-intake.db.password}}"
                """);
        Path config = work.resolve("application.properties");
        Files.writeString(config, Files.readString(Path.of("config/application.properties"))
                + "\n# Camel prints every property with its value (masked or not) at start\ncamel.main.startup-summary-level=Verbose\n");
        Map<String, String> env = RunnerProcess.pollingEnv(work, simulator.url(), token);
        env.put("CHAT_INTAKE_CONFIG", config.toString());
        env.put("CHAT_INTAKE_ROUTES_DIR", routes.toString());
        env.put("CHAT_INTAKE_LOG_LEVEL", "DEBUG");
        env.put("CHAT_INTAKE_CAMEL_LOG_LEVEL", "DEBUG");
        env.put("UNIFYPORT_SIGNING_SECRETS", SIGNING_OLD + "," + SIGNING_NEW);
        env.put("CHAT_INTAKE_DB_PASSWORD", DB_PASSWORD);
        env.put("WORK_MAX_ATTEMPTS", "2");
        env.put("WORK_BACKOFF_BASE_MILLIS", "200");
        simulator.blockChat(token, 66);
        List<String> secrets = List.of(token, token.substring(token.indexOf(':') + 1), SIGNING_OLD, SIGNING_NEW, DB_PASSWORD);

        try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
            DataSource db = RunnerProcess.embeddedDatabase(env);
            simulator.enqueueText(token, 66, "stock");
            simulator.enqueueText(token, 67, "throw");
            Await.until("both items parked", WAIT, () -> Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'parked'") == 2);
            assertThat(simulator.sendAttempts(token)).as("camel-telegram really called and failed").isNotEmpty();

            assertThat(Sql.string(db, "SELECT string_agg(last_error, ' | ') FROM work_item")).contains("[redacted]");
            assertNoSecret("table dump", dumpAllTables(db), secrets);

            RunnerProcess status = RunnerProcess.start(work.resolve("status"), env, "work", "status");
            assertThat(status.awaitExit(WAIT)).as(status.output()).isZero();
            assertThat(status.output()).contains("leaking [redacted] and [redacted]");
            assertNoSecret("work status", status.output(), secrets);

            String metrics = runner.get("/observe/metrics").body();
            assertThat(metrics).contains("chat_intake_work");
            assertNoSecret("metrics", metrics, secrets);

            String output = runner.output();
            assertThat(output).as("Camel's own summary masks secret keys").containsPattern("telegram\\.bot-token\\s*=\\s*xxxxxx")
                    .containsPattern("unifyport\\.signing-secrets\\s*=\\s*xxxxxx").contains("DEBUG");
            assertNoSecret("runner output", output, secrets);
        }
    }

    @Test
    void aCrashBetweenTheReplyAndItsRecordIsParkedOnceAndSettledByResolveEffect() {
        Map<String, String> env = RunnerProcess.pollingEnv(work, simulator.url(), token);
        env.put("TELEGRAM_ECHO_REPLIES", "true");
        env.put("WORK_CLAIM_SECONDS", "3");
        Map<String, String> crashing = new HashMap<>(env);
        crashing.put("CHAT_INTAKE_TEST_CRASH_AT", "effect.after-action");
        DataSource db = RunnerProcess.embeddedDatabase(env);

        RunnerProcess first = RunnerProcess.start(work, crashing).awaitReady();
        simulator.enqueueText(token, 7, "please answer once");
        assertThat(first.awaitExit(WAIT)).as("halted at the crash point").isEqualTo(137);
        first.close();
        assertThat(simulator.sentMessages(token)).hasSize(1);

        try (RunnerProcess second = RunnerProcess.start(work, env).awaitReady()) {
            Await.until("parked", WAIT, () -> "parked".equals(Sql.string(db, "SELECT state FROM work_item")));
            String key = "890:1:echo-reply";
            assertThat(Sql.string(db, "SELECT last_error FROM work_item")).contains(key + " was started but never recorded done");

            RunnerProcess status = RunnerProcess.start(work.resolve("status"), env, "work", "status");
            assertThat(status.awaitExit(WAIT)).as(status.output()).isZero();
            assertThat(status.output()).contains("telegram-update    parked   1")
                    .contains("work resolve-effect KEY --performed|--not-performed").contains(key + " (work item 1)");

            RunnerProcess resolve = RunnerProcess.start(work.resolve("resolve"), env, "work", "resolve-effect", key, "--performed", "--by", "alice");
            assertThat(resolve.awaitExit(WAIT)).as(resolve.output()).isZero();
            assertThat(resolve.output()).contains("recorded performed (done) by alice").contains("work item 1 back to pending");

            Await.until("done", WAIT, () -> "done".equals(Sql.string(db, "SELECT state FROM work_item")));
            assertThat(Sql.string(db, "SELECT state || ' ' || resolved_by FROM outbound_effect WHERE effect_key = '" + key + "'"))
                    .isEqualTo("done alice");
            assertThat(simulator.sendAttempts(token)).as("never sent twice").hasSize(1);
        }
    }

    @Test
    void aStockTelegramConsumerForAPolledBotStopsTheStartWithOneLine() throws Exception {
        Path routes = Files.createDirectories(work.resolve("routes"));
        Files.copy(Path.of("routes/telegram.yaml"), routes.resolve("telegram.yaml"));
        Files.writeString(routes.resolve("second-poller.yaml"), """
                - route:
                    id: second-poller
                    from:
                      uri: "telegram:bots"
                      steps:
                        - log: "${body}"
                """);
        Map<String, String> env = RunnerProcess.pollingEnv(work, simulator.url(), token);
        env.put("CHAT_INTAKE_ROUTES_DIR", routes.toString());
        simulator.enqueueText(token, 5, "not to be confirmed by anyone else");

        try (RunnerProcess runner = RunnerProcess.start(work, env)) {
            assertThat(runner.awaitExit(WAIT)).as(runner.output()).isEqualTo(2);
            assertThat(runner.output()).contains("chat-intake: ").contains("route 'second-poller' consumes telegram:bots with the token"
                    + " of the bot that route 'telegram-main' polls through telegram-inbox:main; refused");
            assertNoSecret("runner output", runner.output(), List.of(token));
        }
        assertThat(simulator.requests()).noneMatch(r -> r.method().equals("getUpdates"));
        assertThat(simulator.queued(token)).isEqualTo(1);
    }

    private static String dumpAllTables(DataSource db) {
        List<String> tables = List.of(Sql.string(db,
                "SELECT string_agg(tablename, ',') FROM pg_tables WHERE schemaname = current_schema()").split(","));
        StringBuilder dump = new StringBuilder();
        for (String table : tables) {
            dump.append(Sql.string(db, "SELECT coalesce(string_agg(t::text, E'\\n'), '') FROM \"" + table + "\" t")).append('\n');
        }
        assertThat(dump).as("the dump holds the stored updates").contains("stock");
        return dump.toString();
    }

    private static void assertNoSecret(String where, String text, List<String> secrets) {
        for (String secret : secrets) {
            assertThat(text).as(where + " holds a secret").doesNotContain(secret);
        }
    }
}
