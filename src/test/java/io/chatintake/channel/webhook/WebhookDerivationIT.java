package io.chatintake.channel.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Secret;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.Response;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import io.chatintake.support.CrashPoint;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The packaged jar killed while stored webhook events wait for their derivation (children, album
 * links, attachment rows, work items): the next runner derives each of them exactly once and
 * every handler runs once, in per-chat order. The test holds the derivation's advisory lock (the
 * one every deriver takes) to keep the events stored and underived for as long as it needs.
 */
class WebhookDerivationIT {
    private static final String SECRET = "whk_derivation_it_secret";
    private static final String DERIVATION_LOCK = "SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.webhook_event derivation'))";
    private static final Pattern HANDLED = Pattern.compile("unifyport event (evt_\\S+) type");

    @TempDir
    Path work;

    @Test
    void killedBetweenTheAnswersAndTheDerivationTheNextRunnerDerivesEachEventOnceInChatOrder() throws Exception {
        Map<String, String> env = env();
        DataSource db = RunnerProcess.embeddedDatabase(env);
        List<String> chatA = new ArrayList<>();
        List<String> chatB = new ArrayList<>();
        // Not closed: closing a runner that was killed stops the postgres it leaves behind, which the next one takes over.
        RunnerProcess killed = RunnerProcess.start(work, env).awaitReady();
        SignedDeliverySender first = sender(killed);
        try (Connection holder = db.getConnection(); Statement s = holder.createStatement()) {
            holder.setAutoCommit(false);
            s.execute(DERIVATION_LOCK);
            assertThat(post(first, "evt_album_1", album(1))).isEqualTo("{\"status\":\"stored\"}");
            assertThat(post(first, "evt_album_2", album(2))).isEqualTo("{\"status\":\"stored\"}");
            for (int i = 0; i < 10; i++) {
                chatA.add(postText(first, "a", i));
                chatB.add(postText(first, "b", i));
            }
            assertThat(post(first, "evt_album_1", album(1))).as("stored, not derived yet: still a duplicate")
                    .isEqualTo("{\"status\":\"duplicate\"}");
            assertThat(Sql.rows(db, "SELECT count(*), count(*) FILTER (WHERE derived_at IS NULL), sum(delivery_count) FROM webhook_event"))
                    .as("one row per event before the answers, none derived").containsExactly(List.of(22L, 22L, 23L));
            assertThat(Sql.count(db, "SELECT (SELECT count(*) FROM channel_message) + (SELECT count(*) FROM message_attachment)"
                    + " + (SELECT count(*) FROM album) + (SELECT count(*) FROM work_item) + (SELECT count(*) FROM work_staged)"))
                    .as("nothing derived before the kill").isZero();
            killed.kill9();
            holder.commit();
        }
        assertThat(HANDLED.matcher(killed.output()).find()).as("no handler ran in the killed runner").isFalse();

        Map<String, String> ordered = new HashMap<>(env);
        ordered.put("WORK_ORDERED_KINDS", "unifyport-event,album-child,telegram-update");
        try (RunnerProcess resumed = RunnerProcess.start(work, ordered).awaitReady()) {
            SignedDeliverySender sender = sender(resumed);
            for (int i = 10; i < 15; i++) {
                chatA.add(postText(sender, "a", i));
                chatB.add(postText(sender, "b", i));
            }
            assertThat(post(sender, "evt_album_2", album(2))).isEqualTo("{\"status\":\"duplicate\"}");
            Await.workScheduled(db);
            Await.until("every event handled", Duration.ofSeconds(60),
                    () -> Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'unifyport-event' AND state = 'done'") == 32);

            assertThat(Sql.rows(db, "SELECT message_id, count(*) FROM channel_message WHERE album_id = 'alb_1' GROUP BY message_id"
                    + " ORDER BY message_id")).as("each album child once").containsExactly(List.of("m_album_1", 1L), List.of("m_album_2", 1L));
            assertThat(Sql.count(db, "SELECT count(*) FROM channel_message")).isEqualTo(32);
            assertThat(Sql.count(db, "SELECT count(*) FROM message_attachment")).as("one attachment row per child").isEqualTo(2);
            assertThat(Sql.count(db, "SELECT count(*) FROM album")).as("one album").isEqualTo(1);
            assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'album-child'")).as("each child linked once").isEqualTo(2);
            assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'unifyport-event'")).isEqualTo(32);
            assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event WHERE derived_at IS NULL OR child IS NOT NULL")).isZero();

            List<String> handled = handledIn(resumed.output());
            assertThat(handled).as("every handler ran once").hasSize(32).doesNotHaveDuplicates();
            assertThat(handled.stream().filter(chatA::contains).toList()).as("chat a in order across the restart").isEqualTo(chatA);
            assertThat(handled.stream().filter(chatB::contains).toList()).as("chat b in order across the restart").isEqualTo(chatB);
            for (String chat : List.of("a", "b")) {
                assertThat(Sql.rows(db, "SELECT w.source_id FROM work_item w WHERE w.kind = 'unifyport-event' AND w.chat_key LIKE '%:conv_"
                        + chat + "' ORDER BY w.id")).as("chat %s: work items in the order of its events", chat)
                        .isEqualTo(Sql.rows(db, "SELECT e.id FROM webhook_event e WHERE e.chat_key LIKE '%:conv_" + chat + "' ORDER BY e.id"));
            }
        }
    }

    @Test
    void aCrashInsideTheDerivationLeavesNothingAndTheNextRunnerDerivesOnce() throws Exception {
        Map<String, String> env = env();
        DataSource db = RunnerProcess.embeddedDatabase(env);
        Map<String, String> crashing = new HashMap<>(env);
        crashing.put("CHAT_INTAKE_TEST_CRASH_AT", CrashPoint.WEBHOOK_DURING_DERIVATION);
        RunnerProcess crashed = RunnerProcess.start(work, crashing).awaitReady();
        try (Connection holder = db.getConnection(); Statement s = holder.createStatement()) {
            holder.setAutoCommit(false);
            // Held until the answer is in: the derivation, and so the crash, come after it.
            s.execute(DERIVATION_LOCK);
            assertThat(post(sender(crashed), "evt_album_1", album(1))).isEqualTo("{\"status\":\"stored\"}");
            holder.commit();
        }
        assertThat(crashed.awaitExit(Duration.ofSeconds(30))).as(crashed.output()).isEqualTo(137);
        assertThat(crashed.output()).contains("crash point " + CrashPoint.WEBHOOK_DURING_DERIVATION + " reached");
        assertThat(Sql.rows(db, "SELECT count(*), count(*) FILTER (WHERE derived_at IS NULL) FROM webhook_event"))
                .containsExactly(List.of(1L, 1L));
        assertThat(Sql.count(db, "SELECT (SELECT count(*) FROM channel_message) + (SELECT count(*) FROM message_attachment)"
                + " + (SELECT count(*) FROM album) + (SELECT count(*) FROM work_item)")).as("the deriving transaction rolled back").isZero();

        try (RunnerProcess resumed = RunnerProcess.start(work, env).awaitReady()) {
            resumed.awaitOutput("unifyport event evt_album_1 type", Duration.ofSeconds(30));
            Await.workScheduled(db);
            assertThat(Sql.rows(db, "SELECT (SELECT count(*) FROM channel_message), (SELECT count(*) FROM message_attachment),"
                    + " (SELECT count(*) FROM album), (SELECT count(*) FROM work_item WHERE kind = 'unifyport-event')"))
                    .containsExactly(List.of(1L, 1L, 1L, 1L));
            assertThat(handledIn(resumed.output())).containsExactly("evt_album_1");
        }
    }

    private static List<String> handledIn(String output) {
        List<String> handled = new ArrayList<>();
        Matcher m = HANDLED.matcher(output);
        while (m.find()) {
            handled.add(m.group(1));
        }
        return handled;
    }

    private static SignedDeliverySender sender(RunnerProcess runner) {
        return new SignedDeliverySender(URI.create("http://127.0.0.1:" + runner.httpPort() + "/webhooks/unifyport"), Secret.of(SECRET));
    }

    private static String post(SignedDeliverySender sender, String eventId, String data) {
        byte[] body = SignedDeliverySender.envelope(eventId, "message.received", "whatsapp", "acc_1", Instant.now(), data);
        Response response = sender.post(sender.sign(eventId, body, TimestampForm.RFC3339));
        assertThat(response.status()).as(response.body()).isEqualTo(200);
        return response.body();
    }

    private static String postText(SignedDeliverySender sender, String chat, int i) {
        String eventId = "evt_" + chat + "_" + String.format("%02d", i);
        assertThat(post(sender, eventId, "{\"conversation\":{\"id\":\"conv_" + chat + "\",\"type\":\"user\"},\"message\":{\"id\":\"m_"
                + chat + "_" + i + "\",\"type\":\"text\",\"text\":\"text " + i + "\"}}")).isEqualTo("{\"status\":\"stored\"}");
        return eventId;
    }

    /** A child of a 2-photo album, its photo on a loopback port nothing listens on (never fetched in this test). */
    private static String album(int index) {
        return "{\"conversation\":{\"id\":\"conv_album\",\"type\":\"user\"},\"message\":{\"id\":\"m_album_" + index
                + "\",\"type\":\"image\",\"attachments\":[{\"type\":\"image\",\"url\":\"http://127.0.0.1:9/p" + index + ".jpg\"}],"
                + "\"album\":{\"id\":\"alb_1\",\"index\":" + index + ",\"total\":2}}}";
    }

    private Map<String, String> env() throws Exception {
        Map<String, String> env = new HashMap<>(RunnerProcess.baseEnv(work));
        env.put("UNIFYPORT_SIGNING_SECRETS", SECRET);
        Path routes = Files.createDirectories(work.resolve("routes"));
        for (String file : List.of("unifyport-webhook.yaml", "unifyport-handlers.yaml")) {
            Files.copy(Path.of("routes", file), routes.resolve(file));
        }
        return env;
    }
}
