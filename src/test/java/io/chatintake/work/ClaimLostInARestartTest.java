package io.chatintake.work;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.store.EmbeddedDatabase;
import io.chatintake.store.Migrations;
import io.chatintake.testkit.LogCapture;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A claim commits without waiting for the disk, so a database server that crashes right after it
 * comes back without it: its items unclaimed and due, released by nobody. The runner that held it
 * says so, rather than that another process released or took it, against a real PostgreSQL
 * restarted under it.
 */
class ClaimLostInARestartTest {
    private static final Duration CLAIM = Duration.ofSeconds(60);
    private static final String WORKER = "restart-test";

    @TempDir
    Path work;

    @Test
    void aClaimMissingAfterTheDatabaseRestartedIsToldLostInTheRestart() throws Exception {
        int port = RunnerProcess.freePort();
        EmbeddedDatabase database = EmbeddedDatabase.start(work.resolve("pg"), port, false);
        try {
            DataSource db = Sql.dataSource(database);
            Migrations.apply(db);
            WorkQueue queue = new WorkQueue(db);
            WorkMetrics metrics = new WorkMetrics(db);
            metrics.start(new SimpleMeterRegistry(), () -> 1);
            ClaimedRuns runs = new ClaimedRuns(new WorkerWakeups(), metrics);
            ClaimKeeper keeper = new ClaimKeeper(queue, new RunnerHeartbeat(db, WORKER, () -> null), WORKER, runs, new WorkerWakeups(),
                    CLAIM, Duration.ofSeconds(2), Duration.ofSeconds(8));
            try (Connection c = db.getConnection()) {
                c.setAutoCommit(false);
                WorkQueue.schedule(c, List.of(new WorkQueue.NewWork("chat-work", "chat-work:1", 1, "a"),
                        new WorkQueue.NewWork("chat-work", "chat-work:2", 2, "b")));
                c.commit();
            }
            runs.add(queue.claimLanes(WORKER, CLAIM, 100, 32, Set.of("chat-work"), Set.of("chat-work")).runs());
            List<ActiveRun> slice = runs.takeSlice(1, 100);
            ActiveRun lost = slice.get(0);

            database.close();
            database = EmbeddedDatabase.start(work.resolve("pg"), port, false);
            // What a crash right after the claim leaves: the items as they were before it, and nobody released them.
            Sql.execute(db, "UPDATE work_item SET state = 'pending', claimed_by = NULL, claim_token = NULL, attempts = attempts - 1"
                    + " WHERE claim_token = " + lost.run.token());

            try (LogCapture log = new LogCapture()) {
                keeper.extendClaims();
                assertThat(log.lines()).filteredOn(line -> line.contains("was lost in a restart of the database")).hasSize(1);
                assertThat(log.lines()).noneMatch(line -> line.contains("released or taken over"));
            }
            assertThat(lost.lost.get()).as("its outcomes are dropped all the same: its items run again").isTrue();
            assertThat(slice.get(1).lost.get()).as("the other claim survived the restart").isFalse();
        } finally {
            database.close();
        }
    }
}
