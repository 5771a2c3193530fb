package io.chatintake.app;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.chatintake.sim.BotApiSimulator;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The real jar against the Bot API simulator, with a copy of the shipped routes and echo replies
 * on: a handler file dropped into routes/ in place of the shipped one ({@code from:
 * "work:telegram-update"}, its reply in a guardedEffect policy) takes over without a restart and
 * without a property edited; its file deleted, new updates wait as pending with nothing parked and
 * one WARN line says so; restored, they run, in order per chat.
 */
class HandlerRouteReplacedIT {
    private static final Duration WAIT = Duration.ofSeconds(90);
    private static final long BOT = 893;
    private static final String HANDLER = """
            - route:
                id: telegram-update
                from:
                  uri: "work:telegram-update"
                  steps:
                    - filter:
                        simple: "${header.TelegramText} != null"
                        steps:
                          - policy:
                              id: handled-reply
                              ref: guardedEffect
                              steps:
                                - setBody:
                                    simple: "Handled: ${header.TelegramText}"
                                - to: "telegram-bot:main?method=sendMessage"
            - route:
                id: album-decision
                from:
                  uri: "work:album-decision"
                  steps:
                    - log: "album ${header.AlbumKey}"
            """;

    private static Path routes;
    private static BotApiSimulator simulator;
    private static String token;
    private static RunnerProcess runner;
    private static DataSource db;

    @BeforeAll
    static void startRunner() throws Exception {
        Path work = Files.createTempDirectory("handler-route-replaced-it");
        routes = Files.createDirectories(work.resolve("routes"));
        try (Stream<Path> shipped = Files.list(Path.of("routes"))) {
            for (Path file : shipped.toList()) {
                Files.copy(file, routes.resolve(file.getFileName()));
            }
        }
        simulator = BotApiSimulator.start();
        token = simulator.addBot(BOT, "FAKE-replaced-handler-token", "replaced_handler_bot");
        Map<String, String> env = RunnerProcess.pollingEnv(work, simulator.url(), token);
        env.put("CHAT_INTAKE_ROUTES_DIR", routes.toString());
        env.put("TELEGRAM_ECHO_REPLIES", "true");
        env.put("WORK_BACKOFF_BASE_MILLIS", "200");
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
    void aDroppedHandlerReplacesTheShippedOneDeletedItsItemsWaitRestoredTheyRunInOrder() throws Exception {
        simulator.enqueueText(token, 1, "before");
        Await.until("the shipped echo handler's reply", WAIT, () -> texts().contains("Received: before"));

        write(HANDLER);
        Await.until("the dropped handler running", WAIT, () -> occurrences("runs work of kind telegram-update in this process") >= 2);
        Map<Long, List<String>> expected = enqueue("now", 3, 3);
        Await.until("9 new replies", WAIT, () -> handled("now").size() == 9);
        assertThat(byChat(handled("now"))).isEqualTo(expected);
        assertThat(texts()).as("the shipped handler no longer replies").noneMatch(t -> t.startsWith("Received: now"));

        Files.delete(routes.resolve("handlers.yaml"));
        Await.until("the WARN that telegram-update items now wait", WAIT,
                () -> occurrences("no route consumes work:telegram-update any more; items of kind telegram-update now wait") == 1);
        Map<Long, List<String>> waiting = enqueue("waiting", 3, 3);
        Await.until("9 updates stored as pending work", WAIT, () -> count("pending") == 9);
        assertThat(count("parked")).isZero();
        assertThat(handled("waiting")).isEmpty();

        write(HANDLER);
        Await.until("the 9 waiting updates handled", WAIT, () -> handled("waiting").size() == 9 && count("done") == count("all"));
        assertThat(byChat(handled("waiting"))).as("in order per chat").isEqualTo(waiting);
        assertThat(count("parked")).isZero();
        assertThat(Sql.count(db, "SELECT max(attempts) FROM work_item WHERE kind = 'telegram-update'")).as("no failed attempt").isEqualTo(1);
        assertThat(occurrences("items of kind telegram-update now wait")).as("told once").isEqualTo(1);
        assertThat(runner.output()).doesNotContain("ERROR");
    }

    /** Replaces routes/handlers.yaml at once, as a ConfigMap update or an editor's rename does. */
    private static void write(String content) throws Exception {
        Path staged = routes.resolveSibling("handlers.yaml.new");
        Files.writeString(staged, content);
        Files.move(staged, routes.resolve("handlers.yaml"), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    /** Enqueues {@code perChat} texts "<prefix> <n>" to chats 1..chats, interleaved; the replies expected per chat. */
    private static Map<Long, List<String>> enqueue(String prefix, int chats, int perChat) {
        Map<Long, List<String>> expected = new TreeMap<>();
        for (int m = 0; m < perChat; m++) {
            for (long chat = 1; chat <= chats; chat++) {
                String text = prefix + " " + chat + "." + m;
                simulator.enqueueText(token, chat, text);
                expected.computeIfAbsent(chat, c -> new ArrayList<>()).add("Handled: " + text);
            }
        }
        return expected;
    }

    private static List<String> texts() {
        return simulator.sentMessages(token).stream().map(m -> m.path("text").asText()).toList();
    }

    private static List<JsonNode> handled(String prefix) {
        return simulator.sentMessages(token).stream().filter(m -> m.path("text").asText().startsWith("Handled: " + prefix + " ")).toList();
    }

    private static Map<Long, List<String>> byChat(List<JsonNode> sends) {
        return sends.stream().collect(Collectors.groupingBy(m -> m.path("chat_id").asLong(), TreeMap::new,
                Collectors.mapping(m -> m.path("text").asText(), Collectors.toList())));
    }

    private static long count(String state) {
        return Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'telegram-update'" + (state.equals("all") ? "" : " AND state = '"
                + state + "'"));
    }

    private static long occurrences(String text) {
        return runner.output().lines().filter(line -> line.contains(text)).count();
    }
}
