package io.chatintake.work;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.Await;
import io.chatintake.testkit.LogCapture;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** ClaimKeeper's beats, extensions and releases of claims, against a real PostgreSQL. */
@ExtendWith(TestDatabase.class)
class ClaimKeeperTest {
    private static final Duration CLAIM = Duration.ofSeconds(60);
    private static final String WORKER = "keeper-test";

    private final DataSource dataSource = TestDatabase.dataSource();
    private final WorkQueue queue = new WorkQueue(dataSource);
    private final WorkMetrics metrics = new WorkMetrics(dataSource);
    private final ClaimedRuns runs = new ClaimedRuns(new WorkerWakeups(), metrics);
    private final ClaimKeeper keeper = new ClaimKeeper(queue, new RunnerHeartbeat(dataSource, WORKER, () -> null), WORKER, runs,
            new WorkerWakeups(), CLAIM, Duration.ofSeconds(2), Duration.ofSeconds(8));

    /** Two chats' runs claimed here, as a worker's slice holds them. */
    private List<ActiveRun> claimTwoRuns() throws Exception {
        metrics.start(new SimpleMeterRegistry(), () -> 1);
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            WorkQueue.schedule(c, List.of(new WorkQueue.NewWork("chat-work", "chat-work:1", 1, "a"),
                    new WorkQueue.NewWork("chat-work", "chat-work:2", 2, "b")));
            c.commit();
        }
        Claimed claimed = queue.claimLanes(WORKER, CLAIM, 100, 32, Set.of("chat-work"), Set.of("chat-work"));
        assertThat(claimed.runs()).hasSize(2);
        runs.add(claimed.runs());
        return runs.takeSlice(1, 100);
    }

    @Test
    void extendingMovesTheExpiryOfTheClaimsStillRunningHere() throws Exception {
        List<ActiveRun> slice = claimTwoRuns();
        Sql.execute(dataSource, "UPDATE work_item SET claim_expires_at = now() + interval '5 seconds'");

        keeper.extendClaims();

        assertThat(Sql.count(dataSource, "SELECT count(*) FROM work_item WHERE claim_expires_at > now() + interval '50 seconds'"))
                .as("both runs' items held for another claim time").isEqualTo(2);
        assertThat(slice).noneMatch(run -> run.lost.get());
    }

    @Test
    void whileItRunsItBeatsAndReleasesTheClaimsOfASilentProcessButNotItsOwn() throws Exception {
        claimTwoRuns();
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            WorkQueue.schedule(c, List.of(new WorkQueue.NewWork("chat-work", "chat-work:3", 3, "c")));
            c.commit();
        }
        assertThat(queue.claimLanes("silent-process", CLAIM, 100, 32, Set.of("chat-work"), Set.of("chat-work")).runs()).hasSize(1);
        Sql.execute(dataSource, "INSERT INTO runner_heartbeat (process_id, host, pid, beat_at)"
                + " VALUES ('silent-process', 'elsewhere', 1, now() - interval '1 hour')");
        // Claims of 1.5 s, extended every 500 ms; beats every 200 ms; others are silent after 1 s.
        Sql.execute(dataSource, "UPDATE work_item SET claim_expires_at = now() + interval '1500 milliseconds' WHERE claimed_by = '" + WORKER + "'");
        ClaimKeeper running = new ClaimKeeper(queue, new RunnerHeartbeat(dataSource, WORKER, () -> null), WORKER, runs,
                new WorkerWakeups(), Duration.ofMillis(1500), Duration.ofMillis(200), Duration.ofSeconds(1));
        Thread thread = new Thread(running, "claim-keeper-test");
        try (LogCapture log = new LogCapture()) {
            running.firstBeat();
            thread.start();
            Await.until("the silent process's claim released and said so", Duration.ofSeconds(20),
                    () -> log.lines().stream().anyMatch(line -> line.contains("released 1 claimed item(s) of process(es) silent")));
            assertThat(Sql.string(dataSource, "SELECT state FROM work_item WHERE source_key = 'chat-work:3'")).isEqualTo("pending");
            Await.until("a beat after the first", Duration.ofSeconds(20), () -> Sql.count(dataSource,
                    "SELECT count(*) FROM runner_heartbeat WHERE process_id = '" + WORKER + "' AND beat_at > started_at") == 1);
            Await.throughout("its own claims extended past their 1.5 s", Duration.ofSeconds(3), () -> Sql.count(dataSource,
                    "SELECT count(*) FROM work_item WHERE claimed_by = '" + WORKER + "' AND state = 'running' AND claim_expires_at > now()") == 2);
            assertThat(log.lines()).filteredOn(line -> line.contains("claimed item(s) of process(es) silent")).as("once").hasSize(1);
        } finally {
            running.stopBeating();
            thread.join(Duration.ofSeconds(20).toMillis());
        }
        assertThat(thread.isAlive()).as("the loop ends once told to stop").isFalse();
    }

    @Test
    void aRunWhoseEndWasJustCommittedIsNotTakenForLostBeforeItsWorkerForgetsIt() throws Exception {
        List<ActiveRun> slice = claimTwoRuns();
        ActiveRun ended = slice.get(0);
        // What a worker's record does: marks the run ending, commits its outcome; it forgets it after.
        ended.ending = true;
        assertThat(queue.finish(List.of(new FinishedRun(ended.run, List.of(RunResult.done(ended.run.items().get(0))), List.of()))))
                .isEmpty();

        try (LogCapture log = new LogCapture()) {
            keeper.extendClaims();
            assertThat(log.lines()).noneMatch(line -> line.contains("released or taken over"));
        }
        assertThat(ended.lost.get()).isFalse();
        assertThat(slice.get(1).lost.get()).as("the other run's claim extended and held").isFalse();
    }

    @Test
    void aRunWhoseItemsAreNoLongerItsClaimsIsToldLostOnce() throws Exception {
        List<ActiveRun> slice = claimTwoRuns();
        ActiveRun taken = slice.get(0);
        // Released as if this process had been silent (as ClaimKeeper's release writes it): its items are another claim's now.
        Sql.execute(dataSource, "UPDATE work_item SET state = 'pending', claimed_by = NULL, claim_token = NULL,"
                + " last_error = 'claim released: keeper-test stopped beating' WHERE claim_token = " + taken.run.token());

        try (LogCapture log = new LogCapture()) {
            keeper.extendClaims();
            keeper.extendClaims();
            assertThat(log.lines()).filteredOn(line -> line.contains("released or taken over")).hasSize(1);
        }
        assertThat(taken.lost.get()).isTrue();
        assertThat(slice.get(1).lost.get()).isFalse();
    }
}
