package io.chatintake.album;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.chatintake.config.Secret;
import io.chatintake.sim.BotApiSimulator;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import io.chatintake.store.EmbeddedDatabase;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.ClusterTemplate;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Random;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Albums through the real jar: children from signed UnifyPort deliveries and from Telegram polling. */
class AlbumIT {
    private static final Duration WAIT = Duration.ofSeconds(90);
    private static final String SECRET = "album_secret_1";

    @TempDir
    Path work;
    private BotApiSimulator simulator;
    private String token;
    private int events;

    @BeforeEach
    void startSimulator() {
        simulator = BotApiSimulator.start();
        token = simulator.addBot(606, "FAKE-album-test-token", "album_bot");
    }

    @AfterEach
    void stopSimulator() {
        simulator.close();
    }

    private Map<String, String> env(Path dir) {
        Map<String, String> env = RunnerProcess.pollingEnv(dir, simulator.url(), token);
        env.put("UNIFYPORT_SIGNING_SECRETS", SECRET);
        // Long enough that children posted back to back on a loaded machine always share one group.
        env.put("ALBUMS_QUIET_PERIOD_SECONDS", "3");
        env.put("ALBUMS_TELEGRAM_QUIET_PERIOD_SECONDS", "3");
        return env;
    }

    /** A UnifyPort-only runner on a database several runners share. */
    private Map<String, String> sharedEnv(Path dir, EmbeddedDatabase database) {
        Map<String, String> env = env(dir);
        env.remove("TELEGRAM_BOT_TOKEN");
        env.put("CHAT_INTAKE_DB_URL", database.jdbcUrl());
        env.put("CHAT_INTAKE_DB_USER", database.user());
        env.put("CHAT_INTAKE_DB_PASSWORD", database.password().reveal());
        return env;
    }

    private SignedDeliverySender sender(RunnerProcess runner) {
        return new SignedDeliverySender(URI.create("http://127.0.0.1:" + runner.httpPort() + "/webhooks/unifyport"), Secret.of(SECRET));
    }

    /** Leaves out the albums of {@link #awaitLaterAlbumsDecidedByTheirTimeout}. */
    private static final String NOT_LATER = " WHERE album_key NOT IN (SELECT album_key FROM album WHERE album_id LIKE 'later-%')";

    /**
     * A one-child album without a total through each sender's runner, which only its quiet period's
     * timeout decides: once they are decided, any timeout restored for an earlier album has fired too.
     */
    private void awaitLaterAlbumsDecidedByTheirTimeout(DataSource db, List<SignedDeliverySender> senders) {
        for (int i = 0; i < senders.size(); i++) {
            child(senders.get(i), "later-" + i, "later-" + i + "-1", "later-" + i, 1, null);
        }
        Await.until("the later albums decided by their timeout", WAIT, () -> Sql.count(db,
                "SELECT count(*) FROM album WHERE album_id LIKE 'later-%' AND decided_version >= 1") == senders.size());
    }

    /** One UnifyPort child; a null index or total leaves it out, as providers do. */
    private void child(SignedDeliverySender sender, String conversation, String messageId, String albumId, Integer index, Integer total) {
        String album = "{\"id\":\"" + albumId + "\"" + (index == null ? "" : ",\"index\":" + index)
                + (total == null ? "" : ",\"total\":" + total) + "}";
        event(sender, "message.received", conversation, "{\"id\":\"" + messageId + "\",\"type\":\"image\",\"caption\":\"caption of "
                + messageId + "\",\"direction\":\"in\",\"sent_at\":\"2026-07-01T09:15:00Z\",\"album\":" + album + "}", Instant.now());
    }

    /** A message.* event about one message of a conversation, signed and answered 200. */
    private void event(SignedDeliverySender sender, String type, String conversation, String messageJson, Instant occurredAt) {
        String data = "{\"conversation\":{\"id\":\"" + conversation + "\",\"type\":\"user\"},\"sender\":{\"id\":\"u1\",\"type\":\"user\"},"
                + "\"message\":" + messageJson + "}";
        String eventId = "evt_album_" + (++events);
        byte[] body = SignedDeliverySender.envelope(eventId, type, "whatsapp", "acc_1", occurredAt, data);
        assertThat(sender.post(sender.sign(eventId, body, TimestampForm.RFC3339)).status()).isEqualTo(200);
    }

    private static String key(String provider, String account, String conversation, String albumId) {
        return "[\"default\", \"" + provider + "\", \"" + account + "\", \"" + conversation + "\", \"" + albumId + "\"]";
    }

    private static String decision(DataSource db, String albumKey, int version) {
        return Sql.string(db, "SELECT kind || ' ' || jsonb_array_length(child_ids) FROM album_decision WHERE album_key = '"
                + albumKey + "' AND version = " + version);
    }

    private static void awaitDecision(DataSource db, String albumKey, int version) {
        Await.until("decision " + version + " of " + albumKey, WAIT, () -> decision(db, albumKey, version) != null);
    }

    @Test
    void unifyPortAlbumsFollowEveryRuleOfTheSeed() throws Exception {
        Map<String, String> env = ClusterTemplate.seed(env(work));
        env.remove("TELEGRAM_BOT_TOKEN");
        DataSource db = RunnerProcess.embeddedDatabase(env);
        try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
            SignedDeliverySender sender = sender(runner);
            // duplicates: B twice, C once -> two distinct children (total 3 never reached)
            child(sender, "c-dup", "B", "dup", 1, 3);
            child(sender, "c-dup", "B", "dup", 1, 3);
            child(sender, "c-dup", "C", "dup", 2, 3);
            // out-of-order indexes
            child(sender, "c-ooo", "o3", "ooo", 3, 3);
            child(sender, "c-ooo", "o1", "ooo", 1, 3);
            child(sender, "c-ooo", "o2", "ooo", 2, 3);
            // the same album id in two conversations: two albums
            child(sender, "c-one", "s1", "same", 1, 2);
            child(sender, "c-two", "s2", "same", 1, 2);
            child(sender, "c-one", "s3", "same", 2, 2);
            // missing total
            child(sender, "c-nototal", "n1", "nototal", 1, null);
            child(sender, "c-nototal", "n2", "nototal", 2, null);
            // conflicting totals
            child(sender, "c-totals", "t1", "totals", 1, 3);
            child(sender, "c-totals", "t2", "totals", 2, 4);
            // an index clash
            child(sender, "c-clash", "i1", "clash", 1, 2);
            child(sender, "c-clash", "i2", "clash", 1, 2);
            // complete, then a late child
            child(sender, "c-late", "l1", "late", 1, 2);
            child(sender, "c-late", "l2", "late", 2, 2);

            String late = key("whatsapp", "acc_1", "c-late", "late");
            awaitDecision(db, late, 1);
            assertThat(decision(db, late, 1)).isEqualTo("complete 2");
            child(sender, "c-late", "l3", "late", 3, 2);

            String ooo = key("whatsapp", "acc_1", "c-ooo", "ooo");
            for (String k : List.of(key("whatsapp", "acc_1", "c-dup", "dup"), ooo, key("whatsapp", "acc_1", "c-one", "same"),
                    key("whatsapp", "acc_1", "c-nototal", "nototal"), key("whatsapp", "acc_1", "c-totals", "totals"),
                    key("whatsapp", "acc_1", "c-clash", "clash"))) {
                awaitDecision(db, k, 1);
            }
            awaitDecision(db, late, 2);

            assertThat(decision(db, key("whatsapp", "acc_1", "c-dup", "dup"), 1)).isEqualTo("provisional 2");
            assertThat(decision(db, ooo, 1)).isEqualTo("complete 3");
            assertThat(Sql.string(db, "SELECT message_ids::text FROM album_decision WHERE album_key = '" + ooo + "'"))
                    .isEqualTo("[\"o1\", \"o2\", \"o3\"]");
            assertThat(decision(db, key("whatsapp", "acc_1", "c-one", "same"), 1)).isEqualTo("complete 2");
            awaitDecision(db, key("whatsapp", "acc_1", "c-two", "same"), 1);
            assertThat(decision(db, key("whatsapp", "acc_1", "c-two", "same"), 1)).isEqualTo("provisional 1");
            assertThat(decision(db, key("whatsapp", "acc_1", "c-nototal", "nototal"), 1)).isEqualTo("provisional 2");
            assertThat(decision(db, key("whatsapp", "acc_1", "c-totals", "totals"), 1)).isEqualTo("conflict 2");
            assertThat(decision(db, key("whatsapp", "acc_1", "c-clash", "clash"), 1)).isEqualTo("conflict 2");
            assertThat(Sql.count(db, "SELECT count(*) FROM album WHERE needs_person")).isEqualTo(2);
            assertThat(decision(db, late, 2)).isEqualTo("late 3");
            assertThat(Sql.count(db, "SELECT count(*) FROM channel_message WHERE album_id = 'dup'")).isEqualTo(2);
            assertThat(Sql.string(db, "SELECT caption FROM channel_message WHERE message_id = 'C'")).isEqualTo("caption of C");
            Await.until("the late decision reaches its handler", WAIT,
                    () -> runner.output().contains("album " + late + " version 2: late with 3 child(ren)"));
            assertThat(Sql.count(db, "SELECT count(*) FROM album_decision")).as("one decision per album, two for the late one").isEqualTo(9);

            RunnerProcess status = RunnerProcess.start(work.resolve("status"), env, "albums", "status");
            assertThat(status.awaitExit(WAIT)).as(status.output()).isZero();
            assertThat(status.output()).contains("conflicts awaiting a person (albums resolve ALBUM_KEY when settled): 2").contains(key("whatsapp", "acc_1", "c-totals", "totals"));

            // the operator's retention dry run, beside the running runner: it lists every table and changes nothing
            long rowsBefore = Sql.count(db, "SELECT (SELECT count(*) FROM album) + (SELECT count(*) FROM album_decision)"
                    + " + (SELECT count(*) FROM work_item) + (SELECT count(*) FROM webhook_event)");
            RunnerProcess dryRun = RunnerProcess.start(work.resolve("purge"), env, "purge", "--dry-run");
            assertThat(dryRun.awaitExit(WAIT)).as(dryRun.output()).isZero();
            assertThat(dryRun.output()).contains("would remove (nothing changed)").contains("telegram_update  0 row(s)")
                    .contains("webhook_event    0 row(s)").contains("album            0 row(s)").contains("outbound_effect  0 row(s)");
            assertThat(Sql.count(db, "SELECT (SELECT count(*) FROM album) + (SELECT count(*) FROM album_decision)"
                    + " + (SELECT count(*) FROM work_item) + (SELECT count(*) FROM webhook_event)")).isEqualTo(rowsBefore);
        }
    }

    private long part(long chatId, String group, long messageId) {
        return simulator.enqueue(token, id -> {
            ObjectNode message = simulator.message(chatId, null);
            message.put("message_id", messageId);
            message.put("media_group_id", group);
            message.putArray("photo").addObject().put("file_id", "f" + messageId).put("file_unique_id", "u" + messageId);
            ObjectNode update = message.objectNode();
            update.set("message", message);
            return update;
        });
    }

    @Test
    void telegramAlbumsCloseByTheQuietPeriodAndAHundredPartsAcrossPagesMakeOneAlbum() throws Exception {
        Map<String, String> env = ClusterTemplate.seed(env(work));
        env.put("TELEGRAM_POLL_LIMIT", "30");
        // The quiet period runs from each stored part: longer than a page's handling on a loaded machine.
        env.put("ALBUMS_TELEGRAM_QUIET_PERIOD_SECONDS", "6");
        DataSource db = RunnerProcess.embeddedDatabase(env);
        try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
            // the same message twice (two updates): one child
            part(70, "g-dup", 1);
            part(70, "g-dup", 1);
            part(70, "g-dup", 2);
            // the same media_group_id in two chats
            part(71, "g-same", 10);
            part(72, "g-same", 10);
            // a hundred parts over four getUpdates pages
            for (int i = 0; i < 100; i++) {
                part(73, "g-hundred", 100 + i);
            }
            String hundred = key("telegram-bot", "606", "73", "g-hundred");
            awaitDecision(db, hundred, 1);
            assertThat(decision(db, hundred, 1)).as("parts stored from %s", Sql.string(db, "SELECT string_agg(to_char(created_at, 'MI:SS.MS')"
                    + " || ' ' || n, ', ') FROM (SELECT created_at, count(*) n FROM channel_message WHERE conversation_id = '73'"
                    + " GROUP BY created_at ORDER BY created_at) x")).isEqualTo("provisional 100");
            assertThat(decision(db, key("telegram-bot", "606", "70", "g-dup"), 1)).isEqualTo("provisional 2");
            awaitDecision(db, key("telegram-bot", "606", "71", "g-same"), 1);
            awaitDecision(db, key("telegram-bot", "606", "72", "g-same"), 1);
            assertThat(decision(db, key("telegram-bot", "606", "71", "g-same"), 1)).isEqualTo("provisional 1");

            // a late part after the decision
            part(70, "g-dup", 3);
            awaitDecision(db, key("telegram-bot", "606", "70", "g-dup"), 2);
            assertThat(decision(db, key("telegram-bot", "606", "70", "g-dup"), 2)).isEqualTo("late 3");
            assertThat(Sql.string(db, "SELECT attachments -> 0 ->> 'telegram_file_id' FROM channel_message WHERE message_id = '3'"
                    + " AND provider = 'telegram-bot'")).isEqualTo("f3");
            assertThat(Sql.count(db, "SELECT count(*) FROM message_attachment WHERE telegram_file_id = 'f3' AND telegram_bot_id = 606"))
                    .as("the part's photo is recorded for download with the child").isEqualTo(1);
            assertThat(simulator.sentMessages(token)).as("no customer-facing resend").isEmpty();
            assertThat(Sql.count(db, "SELECT count(*) FROM album_decision")).isEqualTo(5);
        }
    }

    @Test
    void afterAKill9WithAlbumsOpenEveryAlbumIsDecidedOnceWithAllItsChildren() throws Exception {
        Map<String, String> env = ClusterTemplate.seed(env(work));
        env.remove("TELEGRAM_BOT_TOKEN");
        env.put("WORK_CLAIM_SECONDS", "3");
        DataSource db = RunnerProcess.embeddedDatabase(env);
        Random random = new Random(9);
        RunnerProcess first = RunnerProcess.start(work, env).awaitReady();
        SignedDeliverySender sender = sender(first);
        for (int album = 0; album < 12; album++) {
            int size = 2 + random.nextInt(3);
            // every third album has no total: it stays open until its quiet period ends
            for (int i = 1; i <= size; i++) {
                child(sender, "k-" + album, "k" + album + "-" + i, "kill-" + album, i, album % 3 == 0 ? null : size);
            }
        }
        first.kill9();

        try (RunnerProcess second = RunnerProcess.start(work, env).awaitReady()) {
            Await.until("every album decided", WAIT, () -> Sql.count(db, "SELECT count(*) FROM album WHERE decided_version >= 1") == 12);
            awaitLaterAlbumsDecidedByTheirTimeout(db, List.of(sender(second)));
            assertThat(Sql.count(db, "SELECT count(*) FROM album_decision" + NOT_LATER)).as("decided once each").isEqualTo(12);
            assertThat(Sql.count(db, """
                    SELECT count(*) FROM channel_message m
                     WHERE m.album_id IS NOT NULL AND NOT EXISTS (
                           SELECT 1 FROM album_decision d WHERE d.child_ids @> to_jsonb(m.id))""")).as("no child missing").isZero();
        }
    }

    @Test
    void twoProcessesOnOneDatabaseMakeEachDecisionVersionOnce() throws Exception {
        EmbeddedDatabase database = ClusterTemplate.start(work.resolve("shared-pg"), RunnerProcess.freePort(), false);
        DataSource db = Sql.dataSource(database);
        Map<String, String> envA = sharedEnv(work.resolve("a"), database);
        Map<String, String> envB = sharedEnv(work.resolve("b"), database);
        // Each child of an album without a total must arrive within the quiet period of the one
        // before, through two runners, also on a loaded machine; a later one would make version 2.
        for (Map<String, String> env : List.of(envA, envB)) {
            env.put("ALBUMS_QUIET_PERIOD_SECONDS", "6");
        }
        // Both started at once, each starting while the other does.
        try (RunnerProcess a = RunnerProcess.start(work.resolve("a"), envA);
             RunnerProcess b = RunnerProcess.start(work.resolve("b"), envB)) {
            a.awaitReady();
            b.awaitReady();
            List<SignedDeliverySender> senders = List.of(sender(a), sender(b));
            for (int album = 0; album < 10; album++) {
                for (int i = 1; i <= 4; i++) {
                    child(senders.get(i % 2), "two-" + album, "two" + album + "-" + i, "two-" + album, i, album % 2 == 0 ? 4 : null);
                }
            }
            Await.until("every album decided", WAIT, () -> Sql.count(db, "SELECT count(*) FROM album WHERE decided_version >= 1") == 10);
            awaitLaterAlbumsDecidedByTheirTimeout(db, senders);
            assertThat(Sql.count(db, "SELECT count(*) FROM album_decision" + NOT_LATER)).isEqualTo(10);
            assertThat(Sql.count(db, "SELECT count(*) FROM album_decision WHERE jsonb_array_length(child_ids) = 4")).isEqualTo(10);
            assertThat(Sql.count(db, "SELECT count(*) FROM album_decision WHERE kind = 'complete'")).isEqualTo(5);
        } finally {
            database.close();
        }
    }

    @Test
    void outOfOrderChildrenCompleteByCountAndAKilledRunnersAlbumsAreDecidedByTheOtherOnce() throws Exception {
        EmbeddedDatabase database = ClusterTemplate.start(work.resolve("shared-pg"), RunnerProcess.freePort(), false);
        DataSource db = Sql.dataSource(database);
        int quietSeconds = 8;
        Map<String, String> envA = sharedEnv(work.resolve("a"), database);
        Map<String, String> envB = sharedEnv(work.resolve("b"), database);
        for (Map<String, String> env : List.of(envA, envB)) {
            env.put("ALBUMS_QUIET_PERIOD_SECONDS", Integer.toString(quietSeconds));
            env.put("WORK_CLAIM_SECONDS", "3");
        }
        RunnerProcess a = RunnerProcess.start(work.resolve("a"), envA);
        try (RunnerProcess b = RunnerProcess.start(work.resolve("b"), envB)) {
            a.awaitReady();
            b.awaitReady();
            SignedDeliverySender toA = sender(a);

            // Reactions name m1 and m2 first (the rows exist without an album), then both are received.
            Instant sent = Instant.now().minusSeconds(30);
            event(toA, "message.reaction", "c-react", "{\"id\":\"m1\"}", Instant.now());
            event(toA, "message.reaction", "c-react", "{\"id\":\"m2\"}", Instant.now());
            event(toA, "message.received", "c-react", "{\"id\":\"m1\",\"type\":\"image\",\"album\":{\"id\":\"r\",\"index\":1,\"total\":2}}", sent);
            event(toA, "message.received", "c-react", "{\"id\":\"m2\",\"type\":\"image\",\"album\":{\"id\":\"r\",\"index\":2,\"total\":2}}", sent);
            String reacted = key("whatsapp", "acc_1", "c-react", "r");
            Await.until("the reacted album decided by count", Duration.ofSeconds(quietSeconds - 2), () -> decision(db, reacted, 1) != null);
            assertThat(decision(db, reacted, 1)).isEqualTo("complete 2");

            // Albums whose quiet period is still running on A when A is killed: B decides them.
            for (int album = 0; album < 6; album++) {
                for (int i = 1; i <= 3; i++) {
                    // no total for even albums; odd ones claim 4 and never reach it
                    child(toA, "kill-" + album, "k" + album + "-" + i, "open-" + album, i, album % 2 == 0 ? null : 4);
                }
            }
            // Deliveries are answered before their album rows are derived; kill only once all six albums are open.
            Await.workScheduled(db);
            assertThat(Sql.count(db, "SELECT count(*) FROM album WHERE album_id LIKE 'open-%' AND decided_version = 0")).isEqualTo(6);
            a.kill9();
            long killedAt = System.nanoTime();

            Await.until("B decides every album of the killed runner", Duration.ofSeconds(quietSeconds + 5),
                    () -> Sql.count(db, "SELECT count(*) FROM album WHERE album_id LIKE 'open-%' AND decided_version = 1") == 6);
            double seconds = (System.nanoTime() - killedAt) / 1e9;
            assertThat(Sql.count(db, "SELECT count(*) FROM album a JOIN album_decision d USING (album_key) WHERE a.album_id LIKE 'open-%'"
                    + " AND d.decided_at <= a.last_child_at + interval '" + (quietSeconds + 5) + " seconds'"))
                    .as("decided within quiet period + 5 s of the last child").isEqualTo(6);
            assertThat(Sql.count(db, "SELECT count(*) FROM album_decision d JOIN album a USING (album_key)"
                    + " WHERE a.album_id LIKE 'open-%' AND d.kind = 'provisional' AND jsonb_array_length(d.child_ids) = 3")).isEqualTo(6);
            // B also re-runs the child items A had claimed (claims of 3 s): they find nothing new to decide.
            Await.until("every album child handled", WAIT,
                    () -> Sql.count(db, "SELECT count(*) FROM work_item WHERE kind LIKE 'album-%' AND state <> 'done'") == 0);
            assertThat(Sql.count(db, "SELECT count(*) FROM album_decision")).as("exactly one decision per album").isEqualTo(7);
            assertThat(b.output()).contains("completed by timeout");
            System.out.printf("albums of the killed runner decided %.1f s after the kill (quiet period %d s)%n", seconds, quietSeconds);
        } finally {
            a.close();
            database.close();
        }
    }
}
