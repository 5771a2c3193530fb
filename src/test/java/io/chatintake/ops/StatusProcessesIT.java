package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.store.EmbeddedDatabase;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.ClusterTemplate;
import io.chatintake.testkit.Browser;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two real runners on one database; one is killed with {@code kill -9}. The survivor's status page,
 * in a real headless Chromium, shows it dead (with its host and pid) once it has been silent for
 * {@code work.dead-after-heartbeats} intervals, and no longer lists it after
 * {@code retention.dead-process-minutes}.
 */
class StatusProcessesIT {
    private static final String STATUS_TOKEN = "status-token-SECRET-processes-long-enough";
    private static final Duration DEAD_AFTER = Duration.ofSeconds(3);
    private static final Duration KEPT = Duration.ofMinutes(1);

    @TempDir
    Path work;

    @Test
    void aKilledRunnerShowsDeadWithinTheIntervalAndLeavesAfterRetention() throws Exception {
        EmbeddedDatabase database = ClusterTemplate.start(work.resolve("shared-pg"), RunnerProcess.freePort(), false);
        DataSource db = Sql.dataSource(database);
        // Both runners and the browser started at once, each starting while the others do.
        try (RunnerProcess survivor = RunnerProcess.start(work.resolve("a"), env(database, "a"));
             RunnerProcess victim = RunnerProcess.start(work.resolve("b"), env(database, "b"));
             Browser browser = Browser.start()) {
            survivor.awaitReady();
            victim.awaitReady();
            Await.until("both runners beating", Duration.ofSeconds(60),
                    () -> Sql.count(db, "SELECT count(*) FROM runner_heartbeat WHERE pid = " + victim.pid()) == 1);
            String victimId = Sql.string(db, "SELECT process_id FROM runner_heartbeat WHERE pid = " + victim.pid());
            String page = "http://127.0.0.1:" + survivor.httpPort() + "/status";
            browser.open(page + "?token=" + STATUS_TOKEN);
            assertThat(StatusPageTest.cells(browser.html(), "process-" + victimId)).last().isEqualTo("alive");

            victim.kill9();
            long killed = System.nanoTime();
            Await.until("the killed runner shown dead", Duration.ofSeconds(60), () -> {
                browser.open(page);
                return StatusPageTest.cells(browser.html(), "process-" + victimId).get(5).startsWith("dead since ");
            });
            Duration toDead = Duration.ofNanos(System.nanoTime() - killed);
            // Its last beat came at most one interval before the kill; one page load and a slow machine's slack on top.
            assertThat(toDead).as("dead within the dead-after interval").isLessThan(DEAD_AFTER.plusSeconds(5));
            String html = browser.html();
            assertThat(StatusPageTest.cells(html, "process-" + victimId).subList(1, 3)).containsExactly(
                    Sql.string(db, "SELECT host FROM runner_heartbeat WHERE pid = " + victim.pid()), Long.toString(victim.pid()));
            assertThat(html).contains("process " + victimId);
            assertThat(StatusPageTest.cells(html, "process-" + Sql.string(db, "SELECT process_id FROM runner_heartbeat WHERE pid = " + survivor.pid())))
                    .last().isEqualTo("alive");

            Await.until("the dead runner forgotten", Duration.ofSeconds(180), () -> {
                browser.open(page);
                return !browser.has("process-" + victimId);
            });
            assertThat(Duration.ofNanos(System.nanoTime() - killed)).as("kept for the retention period")
                    .isGreaterThanOrEqualTo(KEPT.minusSeconds(1));
            assertThat(Sql.count(db, "SELECT count(*) FROM runner_heartbeat WHERE pid = " + victim.pid())).isZero();
            assertThat(browser.html()).doesNotContain(STATUS_TOKEN);
        } finally {
            database.close();
        }
    }

    private Map<String, String> env(EmbeddedDatabase database, String name) throws Exception {
        Path dir = work.resolve(name);
        Map<String, String> env = RunnerProcess.baseEnv(dir);
        Files.createDirectories(dir.resolve("routes"));
        env.put("CHAT_INTAKE_DB_URL", database.jdbcUrl());
        env.put("CHAT_INTAKE_DB_USER", database.user());
        env.put("CHAT_INTAKE_DB_PASSWORD", database.password().reveal());
        env.put("CHAT_INTAKE_STATUS_TOKEN", STATUS_TOKEN);
        env.put("WORK_HEARTBEAT_SECONDS", "1");
        env.put("WORK_DEAD_AFTER_HEARTBEATS", Long.toString(DEAD_AFTER.toSeconds()));
        env.put("RETENTION_DEAD_PROCESS_MINUTES", Long.toString(KEPT.toMinutes()));
        return env;
    }
}
