package io.chatintake.album;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Secret;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import io.chatintake.store.EmbeddedDatabase;
import io.chatintake.support.CrashPoint;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * routes/albums.yaml's Aggregator through the real jar: runners sharing one PostgreSQL, runners
 * killed with {@code kill -9} while they hold groups or between a group's removal and its decision,
 * and the route file edited while a runner runs.
 */
class AlbumAggregatorIT {
    private static final Duration WAIT = Duration.ofSeconds(90);
    private static final String SECRET = "aggregator_secret_1";

    @TempDir
    Path work;
    private int events;

    /** A UnifyPort-only runner with test-speed work settings, on the given database (or its own embedded one). */
    private static Map<String, String> env(Path dir, EmbeddedDatabase shared, int quietSeconds) {
        Map<String, String> env = RunnerProcess.baseEnv(dir);
        env.put("CHAT_INTAKE_ROUTES_DIR", Path.of("routes").toAbsolutePath().toString());
        env.put("WORK_POLL_INTERVAL_MILLIS", "100");
        env.put("WORK_CLAIM_SECONDS", "3");
        env.put("UNIFYPORT_SIGNING_SECRETS", SECRET);
        env.put("ALBUMS_QUIET_PERIOD_SECONDS", Integer.toString(quietSeconds));
        if (shared != null) {
            env.put("CHAT_INTAKE_DB_URL", shared.jdbcUrl());
            env.put("CHAT_INTAKE_DB_USER", shared.user());
            env.put("CHAT_INTAKE_DB_PASSWORD", shared.password().reveal());
        }
        return env;
    }

    private static SignedDeliverySender sender(RunnerProcess runner) {
        return new SignedDeliverySender(URI.create("http://127.0.0.1:" + runner.httpPort() + "/webhooks/unifyport"), Secret.of(SECRET));
    }

    /** One UnifyPort child, answered 200 (stored); a null total leaves it out, as providers do. */
    private void child(SignedDeliverySender sender, String conversation, String messageId, String albumId, int index, Integer total) {
        String album = "{\"id\":\"" + albumId + "\",\"index\":" + index + (total == null ? "" : ",\"total\":" + total) + "}";
        String data = "{\"conversation\":{\"id\":\"" + conversation + "\",\"type\":\"user\"},\"sender\":{\"id\":\"u1\",\"type\":\"user\"},"
                + "\"message\":{\"id\":\"" + messageId + "\",\"type\":\"image\",\"direction\":\"in\",\"album\":" + album + "}}";
        String eventId = "evt_aggregator_" + (++events);
        byte[] body = SignedDeliverySender.envelope(eventId, "message.received", "whatsapp", "acc_1", Instant.now(), data);
        assertThat(sender.post(sender.sign(eventId, body, TimestampForm.RFC3339)).status()).isEqualTo(200);
    }

    private static String key(String conversation, String albumId) {
        return "[\"default\", \"whatsapp\", \"acc_1\", \"" + conversation + "\", \"" + albumId + "\"]";
    }

    private static String decisions(DataSource db, String albumKey) {
        return Sql.string(db, "SELECT string_agg(version || ' ' || kind || ' ' || jsonb_array_length(child_ids), ', ' ORDER BY version)"
                + " FROM album_decision WHERE album_key = '" + albumKey + "'");
    }

    /** Nothing of the album left to do anywhere: no group, no completion awaiting its decision, no child or decision work. */
    private static boolean settled(DataSource db) {
        return Sql.count(db, "SELECT (SELECT count(*) FROM album_aggregation) + (SELECT count(*) FROM album_aggregation_completed)"
                + " + (SELECT count(*) FROM work_item WHERE kind LIKE 'album-%' AND state <> 'done')") == 0;
    }

    @Test
    void childrenDeliveredAlternatelyToTwoRunnersMakeOneCompleteDecisionWithEveryChild() throws Exception {
        EmbeddedDatabase database = EmbeddedDatabase.start(work.resolve("shared-pg"), RunnerProcess.freePort(), false);
        DataSource db = Sql.dataSource(database);
        try (RunnerProcess a = RunnerProcess.start(work.resolve("a"), env(work.resolve("a"), database, 20)).awaitReady();
             RunnerProcess b = RunnerProcess.start(work.resolve("b"), env(work.resolve("b"), database, 20)).awaitReady()) {
            List<SignedDeliverySender> senders = List.of(sender(a), sender(b));
            int total = 8;
            for (int i = 1; i <= total; i++) {
                child(senders.get(i % 2), "alt", "alt-" + i, "alternate", i, total);
                if (i == 1) {
                    Await.until("the album's group in the shared repository", WAIT,
                            () -> Sql.count(db, "SELECT count(*) FROM album_aggregation") == 1);
                }
            }
            String album = key("alt", "alternate");
            Await.until("the album decided", Duration.ofSeconds(15), () -> decisions(db, album) != null);
            Await.until("everything settled", WAIT, () -> settled(db));
            assertThat(decisions(db, album)).as("once, by count, long before the quiet period").isEqualTo("1 complete " + total);
            assertThat(Sql.string(db, "SELECT completed_by FROM album_decision")).isEqualTo("predicate");
            assertThat(Sql.count(db, "SELECT count(*) FROM album WHERE decide_after IS NULL")).isEqualTo(1);
            assertThat(a.output() + b.output()).doesNotContain("\tat ");
        } finally {
            database.close();
        }
    }

    @Test
    void theRunnerHoldingAnAlbumKilledBeforeItsQuietPeriodEndsTheOtherDecidesItOnTimeOnce() throws Exception {
        EmbeddedDatabase database = EmbeddedDatabase.start(work.resolve("shared-pg"), RunnerProcess.freePort(), false);
        DataSource db = Sql.dataSource(database);
        int quietSeconds = 8;
        RunnerProcess holder = RunnerProcess.start(work.resolve("a"), env(work.resolve("a"), database, quietSeconds)).awaitReady();
        try (RunnerProcess other = RunnerProcess.start(work.resolve("b"), env(work.resolve("b"), database, quietSeconds)).awaitReady()) {
            SignedDeliverySender toHolder = sender(holder);
            for (int i = 1; i <= 3; i++) {
                child(toHolder, "held", "held-" + i, "held", i, null);
            }
            String album = key("held", "held");
            Await.until("the holder aggregated every child", WAIT,
                    () -> Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'album-child' AND state = 'done'") == 3);
            assertThat(Sql.count(db, "SELECT count(*) FROM album_aggregation WHERE id = '" + album + "'")).isEqualTo(1);
            assertThat(decisions(db, album)).as("still in its quiet period").isNull();
            holder.kill9();

            Await.until("the other runner decides the album", Duration.ofSeconds(quietSeconds + 5), () -> decisions(db, album) != null);
            assertThat(Sql.count(db, "SELECT count(*) FROM album_decision d JOIN album a USING (album_key)"
                    + " WHERE d.decided_at <= a.last_child_at + interval '" + (quietSeconds + 5) + " seconds'"))
                    .as("within the quiet period + 5 s of the last child").isEqualTo(1);
            Await.until("everything settled", WAIT, () -> settled(db));
            assertThat(decisions(db, album)).isEqualTo("1 provisional 3");
            assertThat(Sql.string(db, "SELECT completed_by FROM album_decision")).isEqualTo("timeout");
            assertThat(other.output()).contains("album " + album + ": decision version 1 is provisional with 3 child(ren)");
        } finally {
            holder.close();
            database.close();
        }
    }

    @Test
    void killedAfterTheGroupsRemovalBeforeTheDecisionTheAlbumIsDecidedExactlyOnceAfterRestart() throws Exception {
        Map<String, String> env = env(work, null, 20);
        DataSource db = RunnerProcess.embeddedDatabase(env);
        Map<String, String> crashing = new HashMap<>(env);
        crashing.put("CHAT_INTAKE_TEST_CRASH_AT", CrashPoint.ALBUM_AFTER_GROUP_REMOVED);
        // Not closed: closing a runner that has exited stops the postgres it leaves behind, which the next one takes over.
        RunnerProcess crashed = RunnerProcess.start(work, crashing).awaitReady();
        SignedDeliverySender sender = sender(crashed);
        child(sender, "crash", "crash-1", "crash", 1, 2);
        child(sender, "crash", "crash-2", "crash", 2, 2);
        assertThat(crashed.awaitExit(WAIT)).as(crashed.output()).isEqualTo(137);
        assertThat(crashed.output()).contains("crash point " + CrashPoint.ALBUM_AFTER_GROUP_REMOVED + " reached");
        assertThat(Sql.count(db, "SELECT count(*) FROM album_aggregation")).as("the group was removed").isZero();
        assertThat(Sql.count(db, "SELECT count(*) FROM album_aggregation_completed")).as("kept as completed").isEqualTo(1);
        assertThat(Sql.count(db, "SELECT count(*) FROM album_decision")).isZero();

        try (RunnerProcess restarted = RunnerProcess.start(work, env).awaitReady()) {
            String album = key("crash", "crash");
            Await.until("the album decided after the restart", WAIT, () -> decisions(db, album) != null);
            Await.until("everything settled", WAIT, () -> settled(db));
            assertThat(decisions(db, album)).as("exactly once, with both children").isEqualTo("1 complete 2");
            assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'album-decision'")).isEqualTo(1);
            assertThat(restarted.output()).doesNotContain("\tat ");
        }
    }

    @Test
    void aCompletionTimeoutChangedInTheRouteFileWhileRunningAppliesToTheNextAlbum() throws Exception {
        Path routes = Files.createDirectories(work.resolve("routes"));
        try (Stream<Path> shipped = Files.list(Path.of("routes"))) {
            for (Path file : shipped.toList()) {
                Files.copy(file, routes.resolve(file.getFileName().toString()));
            }
        }
        Map<String, String> env = env(work, null, 30);
        env.put("CHAT_INTAKE_ROUTES_DIR", routes.toString());
        // Camel's own INFO lines, for the one that says the route file was reloaded
        env.put("CHAT_INTAKE_CAMEL_LOG_LEVEL", "INFO");
        DataSource db = RunnerProcess.embeddedDatabase(env);
        try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
            SignedDeliverySender sender = sender(runner);
            child(sender, "before", "before-1", "before", 1, null);
            Await.until("the first album's group", WAIT, () -> Sql.count(db, "SELECT count(*) FROM album_aggregation") == 1);
            assertThat(Sql.count(db, "SELECT count(*) FROM album WHERE decide_after > last_child_at + interval '29 seconds'"))
                    .as("the shipped completionTimeout: albums.quiet-period-seconds").isEqualTo(1);

            Path file = routes.resolve("albums.yaml");
            String shipped = Files.readString(file);
            String edited = shipped.replace("completionTimeout: \"{{albums.quiet-period-seconds}}s\"", "completionTimeout: \"2s\"");
            assertThat(edited).isNotEqualTo(shipped);
            Files.writeString(file, edited);
            runner.awaitOutput("Routes reloaded summary", WAIT);

            child(sender, "after", "after-1", "after", 1, null);
            String album = key("after", "after");
            Await.until("the next album decided by the new completionTimeout", Duration.ofSeconds(20), () -> decisions(db, album) != null);
            assertThat(Sql.count(db, "SELECT count(*) FROM album_decision d JOIN album a USING (album_key) WHERE a.album_id = 'after'"
                    + " AND d.decided_at BETWEEN a.last_child_at + interval '2 seconds' AND a.last_child_at + interval '10 seconds'"))
                    .as("2 s after its child, not 30").isEqualTo(1);
            assertThat(Sql.count(db, "SELECT count(*) FROM album_decision d JOIN album a USING (album_key) WHERE a.album_id = 'before'"
                    + " AND d.decided_at < a.last_child_at + interval '30 seconds'")).as("the earlier album keeps its deadline").isZero();
        }
    }
}
