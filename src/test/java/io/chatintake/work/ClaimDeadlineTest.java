package io.chatintake.work;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.LogCapture;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The start-of-run gate of a process cut off from the database, on its own monotonic clock. */
class ClaimDeadlineTest {
    private final ClaimDeadline deadline = new ClaimDeadline();

    @Test
    void withoutAKeeperNothingReleasesTheClaimsSoRunsStart() {
        assertThat(deadline.mayStart()).isTrue();
        assertThat(deadline.passed(System.nanoTime())).isFalse();
    }

    @Test
    void runsStopOnceTheClaimsCanHaveBeenReleasedAndStartAgainWhenTheKeeperSaysSoEachTransitionToldOnce() {
        long now = System.nanoTime();
        deadline.safeUntil(now + Duration.ofMinutes(1).toNanos());
        assertThat(deadline.mayStart()).isTrue();
        try (LogCapture log = new LogCapture()) {
            deadline.safeUntil(now - 1);
            assertThat(deadline.mayStart()).isFalse();
            assertThat(deadline.mayStart()).isFalse();
            assertThat(deadline.passed(now)).as("claims may have been released since").isTrue();
            deadline.safeUntil(System.nanoTime() + Duration.ofMinutes(1).toNanos());
            assertThat(deadline.mayStart()).isTrue();
            assertThat(log.lines()).filteredOn(line -> line.contains("cut off from the database: stopped starting handler runs"))
                    .hasSize(1);
            assertThat(log.lines()).filteredOn(line -> line.contains("database reachable again: handler runs start again"))
                    .hasSize(1);
            assertThat(log.lines()).noneMatch(line -> line.contains("\tat "));
        }
    }

    @Test
    void aProcessWhoseFirstBeatHasNotGoneThroughStartsNoRun() {
        ClaimedRuns runs = new ClaimedRuns(new WorkerWakeups(), new WorkMetrics(null));
        new ClaimKeeper(null, null, "keeper-test", runs, new WorkerWakeups(), Duration.ofSeconds(60), Duration.ofSeconds(2),
                Duration.ofSeconds(8));
        assertThat(runs.mayStart()).isFalse();
    }
}
