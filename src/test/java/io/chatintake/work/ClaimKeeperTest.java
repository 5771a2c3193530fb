package io.chatintake.work;

import static org.assertj.core.api.Assertions.assertThat;

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

/** ClaimKeeper's extension of this process's claims, against a real PostgreSQL. */
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
        // Released as if this process had been silent: its items are another claim's now.
        Sql.execute(dataSource, "UPDATE work_item SET state = 'pending', claimed_by = NULL, claim_token = NULL"
                + " WHERE claim_token = " + taken.run.token());

        try (LogCapture log = new LogCapture()) {
            keeper.extendClaims();
            keeper.extendClaims();
            assertThat(log.lines()).filteredOn(line -> line.contains("released or taken over")).hasSize(1);
        }
        assertThat(taken.lost.get()).isTrue();
        assertThat(slice.get(1).lost.get()).isFalse();
    }
}
