package io.chatintake.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.Await;
import io.chatintake.testkit.ClusterTemplate;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.nio.file.Path;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three runners under Telegram and webhook load while PostgreSQL restarts twice, down 6 s each:
 * once stopped (fast shutdown), once crashed (immediate shutdown), and no runner killed. None
 * exits, nothing is parked, no live runner's claims are released or taken over (an outage is not a
 * death), and every update and every acknowledged delivery is handled once.
 */
class DatabaseRestartUnderLoadIT {
    private static final Duration OUTAGE = Duration.ofSeconds(6);
    private static final Duration WAIT = Duration.ofSeconds(60);

    @TempDir
    Path work;

    @Test
    void restartsUnderLoadParkNothingEndNoRunnerAndReleaseNoLiveClaims() throws Exception {
        int port = RunnerProcess.freePort();
        Path pg = work.resolve("pg");
        EmbeddedDatabase database = ClusterTemplate.start(pg, port, true);
        try (RunnersUnderLoad load = new RunnersUnderLoad(work, database, 3)) {
            DataSource db = Sql.dataSource(database);
            load.awaitIntake();
            database.close();
            load.keepLoading(OUTAGE);
            database = EmbeddedDatabase.start(pg, port, true);
            load.awaitIntake();
            long postmaster = database.serverProcess().orElseThrow().pid();
            new ProcessBuilder("kill", "-QUIT", Long.toString(postmaster)).inheritIO().start().waitFor();
            Await.until("PostgreSQL crashed", WAIT, () -> ProcessHandle.of(postmaster).map(p -> !p.isAlive()).orElse(true));
            database.close(); // the server is gone; this releases the data directory's lock
            load.keepLoading(OUTAGE);
            database = EmbeddedDatabase.start(pg, port, true);
            load.awaitIntake();
            load.stopLoadAndAwaitHandled(db);

            String brought = load.assertNothingLostDoubledOrParked(db);
            assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE last_error LIKE 'claim released:%'"))
                    .as("no live runner's claim released as dead").isZero();
            for (RunnerProcess runner : load.runners) {
                assertThat(runner.output()).doesNotContain("work: released").doesNotContain("was released or taken over");
            }
            System.out.printf("restart under load, 3 runners: %s%n", brought);
        } finally {
            database.close();
        }
    }
}
