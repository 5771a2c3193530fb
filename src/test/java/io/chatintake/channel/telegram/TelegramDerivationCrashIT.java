package io.chatintake.channel.telegram;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.sim.BotApiSimulator;
import io.chatintake.sim.InboxAudit;
import io.chatintake.support.CrashPoint;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The real jar killed between a polled batch's commit (updates and offset) and what is derived
 * from it afterwards (work items, album children, album links, attachment rows): the next runner
 * derives it all, once, and runs every handler once; per-chat order holds across a kill mid-run.
 */
class TelegramDerivationCrashIT {
    private static final Duration WAIT = Duration.ofSeconds(90);
    private static final Pattern HANDLED = Pattern.compile("telegram update (\\d+) \\(message\\) from bot");

    @TempDir
    Path work;
    private BotApiSimulator simulator;
    private String token;

    @BeforeEach
    void startSimulator() {
        simulator = BotApiSimulator.start();
        token = simulator.addBot(4242, "FAKE-derivation-test-token", "derivation_bot");
    }

    @AfterEach
    void stopSimulator() {
        simulator.close();
    }

    private Map<String, String> env() {
        Map<String, String> env = RunnerProcess.pollingEnv(work, simulator.url(), token);
        env.put("ALBUMS_TELEGRAM_QUIET_PERIOD_SECONDS", "1");
        env.put("WORK_BACKOFF_BASE_MILLIS", "200");
        return env;
    }

    @ParameterizedTest
    @ValueSource(strings = {CrashPoint.TELEGRAM_AFTER_COMMIT, CrashPoint.TELEGRAM_BEFORE_DERIVATION})
    void killedBetweenTheCommitAndTheDerivationEveryChildLinkAndAttachmentAppearsOnceAndEveryHandlerRunsOnce(String crashPoint)
            throws Exception {
        Map<String, String> env = env();
        env.put("TELEGRAM_ECHO_REPLIES", "true");
        // No reply deferred by the send limits: a deferred item runs its handler again, by design.
        env.put("TELEGRAM_SEND_PER_BOT_PER_SECOND", "5000");
        env.put("TELEGRAM_SEND_PER_CHAT_PER_SECOND", "200");
        DataSource db = RunnerProcess.embeddedDatabase(env);
        simulator.setAudit(new InboxAudit(db));
        Map<Long, List<String>> texts = new LinkedHashMap<>();
        List<Long> updates = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            for (long chat = 1; chat <= 3; chat++) {
                String text = "chat " + chat + " text " + i;
                updates.add(simulator.enqueueText(token, chat, text));
                texts.computeIfAbsent(chat, c -> new ArrayList<>()).add("Received: " + text);
            }
        }
        List<String> files = List.of("fa1", "fa2", "fa3", "fb1", "fb2");
        for (String file : files) {
            simulator.addFile(token, file, ("photo " + file).getBytes(StandardCharsets.UTF_8));
            updates.add(simulator.enqueueMediaGroupPart(token, file.startsWith("fa") ? 50 : 51, "album-" + file.charAt(1), file,
                    file.equals("fa1") ? "the first album" : null));
        }
        texts.put(50L, List.of("Received: the first album"));

        Map<String, String> crashing = new HashMap<>(env);
        crashing.put("CHAT_INTAKE_TEST_CRASH_AT", crashPoint);
        RunnerProcess crashed = RunnerProcess.start(work, crashing);
        assertThat(crashed.awaitExit(WAIT)).as(crashed.output()).isEqualTo(137);
        assertThat(crashed.output()).contains("crash point " + crashPoint + " reached");

        // The orphaned postgres still runs: the batch and its offset committed, nothing derived from it.
        assertThat(Sql.count(db, "SELECT count(*) FROM telegram_update")).isEqualTo(updates.size());
        assertThat(Sql.count(db, "SELECT next_offset FROM telegram_checkpoint")).isEqualTo(updates.get(updates.size() - 1) + 1);
        assertThat(Sql.count(db, "SELECT (SELECT count(*) FROM work_item) + (SELECT count(*) FROM channel_message)"
                + " + (SELECT count(*) FROM album) + (SELECT count(*) FROM message_attachment)")).as("nothing derived before the kill").isZero();

        try (RunnerProcess resumed = RunnerProcess.start(work, env).awaitReady()) {
            Await.until("every update handled", WAIT,
                    () -> Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'telegram-update' AND state = 'done'") == updates.size());
            Await.until("both albums decided", WAIT, () -> Sql.count(db, "SELECT count(*) FROM album WHERE decided_version >= 1") == 2);
            Await.until("every photo downloaded", WAIT,
                    () -> Sql.count(db, "SELECT count(*) FROM message_attachment WHERE status = 'stored'") == files.size());
            Await.until("every text answered", WAIT, () -> simulator.sentMessages(token).size() >= 13
                    || Sql.count(db, "SELECT count(*) FROM work_item WHERE state <> 'done'") == 0);
            Await.until("all work done", WAIT, () -> Sql.count(db, "SELECT count(*) FROM work_item WHERE state <> 'done'") == 0);
            assertThat(Sql.count(db, "SELECT count(*) FROM channel_message WHERE provider = 'telegram-bot'"))
                    .as("one child per media-group part").isEqualTo(files.size());
            assertThat(Sql.string(db, "SELECT string_agg(conversation_id || '/' || album_id || '/' || (attachments -> 0 ->> 'telegram_file_id'),"
                    + " ' ' ORDER BY id) FROM channel_message")).isEqualTo("50/album-a/fa1 50/album-a/fa2 50/album-a/fa3 51/album-b/fb1 51/album-b/fb2");
            assertThat(Sql.count(db, "SELECT count(*) FROM album")).as("album links: one album per group").isEqualTo(2);
            assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'album-child'")).as("each child scheduled into its album once")
                    .isEqualTo(files.size());
            assertThat(Sql.count(db, "SELECT count(DISTINCT telegram_file_id) FROM message_attachment WHERE telegram_bot_id = 4242"))
                    .isEqualTo(files.size());
            assertThat(Sql.count(db, "SELECT count(*) FROM message_attachment")).as("one attachment row per photo").isEqualTo(files.size());
            assertThat(Sql.count(db, "SELECT count(*) FROM album_decision")).as("one decision per album").isEqualTo(2);
            assertThat(Sql.count(db, "SELECT max(attempts) FROM work_item")).as("every handler ran once").isEqualTo(1);
            assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'telegram-update'")).isEqualTo(updates.size());

            assertThat(handledCounts(resumed.output()).keySet()).as("every update's handler ran after the restart")
                    .containsExactlyInAnyOrderElementsOf(updates);
            assertThat(handledCounts(crashed.output())).as("nothing handled before the kill").isEmpty();
            assertThat(repliesByChat()).as("each text answered once, in its chat's order").isEqualTo(texts);
        }
        assertThat(simulator.violations()).isEmpty();
    }

    @Test
    void perChatOrderHoldsAcrossAKill9MidRun() throws Exception {
        Map<String, String> env = env();
        // The killed runner's claims lapse soon, so its chats go on after the restart.
        env.put("WORK_CLAIM_SECONDS", "3");
        DataSource db = RunnerProcess.embeddedDatabase(env);
        simulator.setAudit(new InboxAudit(db));
        int total = 3000;
        Map<Long, Long> chatOf = new HashMap<>();
        for (int i = 0; i < total; i++) {
            long chat = 1 + i % 6;
            chatOf.put(simulator.enqueueText(token, chat, "ordered " + i), chat);
            if (i % 500 == 0) {
                chatOf.put(simulator.enqueueMediaGroupPart(token, chat, "group-" + i, "file-" + i, null), chat);
            }
        }

        RunnerProcess first = RunnerProcess.start(work, env);
        Await.until("the first runner handling updates", WAIT, () -> handledCounts(first.output()).size() >= 100);
        first.kill9();
        List<Long> beforeKill = handledInOrder(first.output());
        assertThat(beforeKill.stream().distinct().count()).as("killed mid-run, with updates left to handle").isLessThan(total);

        try (RunnerProcess second = RunnerProcess.start(work, env).awaitReady()) {
            Await.until("every update handled", WAIT,
                    () -> Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'telegram-update' AND state = 'done'") == chatOf.size());
            List<Long> afterRestart = handledInOrder(second.output());
            for (List<Long> run : List.of(beforeKill, afterRestart)) {
                Map<Long, Long> lastPerChat = new HashMap<>();
                for (long update : run) {
                    Long last = lastPerChat.put(chatOf.get(update), update);
                    assertThat(last == null || last <= update).as("update %d handled after %s in its chat", update, last).isTrue();
                }
            }
            List<Long> left = new ArrayList<>(chatOf.keySet());
            left.removeAll(beforeKill);
            assertThat(afterRestart).as("what the kill left is handled after the restart").containsAll(left);
            assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'telegram-update'")).isEqualTo(chatOf.size());
            assertThat(Sql.count(db, "SELECT count(*) FROM channel_message WHERE provider = 'telegram-bot'")).isEqualTo(6);
            assertThat(Sql.count(db, "SELECT count(*) FROM message_attachment")).isEqualTo(6);
        }
        assertThat(simulator.violations()).isEmpty();
    }

    private static List<Long> handledInOrder(String output) {
        List<Long> handled = new ArrayList<>();
        Matcher m = HANDLED.matcher(output);
        while (m.find()) {
            handled.add(Long.parseLong(m.group(1)));
        }
        return handled;
    }

    private static Map<Long, Integer> handledCounts(String output) {
        Map<Long, Integer> counts = new HashMap<>();
        handledInOrder(output).forEach(update -> counts.merge(update, 1, Integer::sum));
        return counts;
    }

    private Map<Long, List<String>> repliesByChat() {
        Map<Long, List<String>> replies = new LinkedHashMap<>();
        simulator.sentMessages(token).forEach(m -> replies.computeIfAbsent(m.path("chat_id").asLong(), c -> new ArrayList<>())
                .add(m.path("text").asText()));
        return replies;
    }
}
