package io.chatintake.work;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class GatheringTest {
    private static final long MS = 1_000_000;
    private final Gathering gathering = new Gathering(Duration.ofMillis(20), Duration.ofMillis(160));

    /** A claim of 16 chats' runs of 2 items each: a busy stream over many chats. */
    private long afterShortRuns() {
        return gathering.after(32, 16, false);
    }

    private long afterOneItem() {
        return gathering.after(1, 1, false);
    }

    @Test
    void workArrivingOneItemAtATimeGathersTheLeast() {
        assertThat(afterOneItem()).isEqualTo(20 * MS);
        assertThat(gathering.after(9, 3, false)).isEqualTo(20 * MS);
    }

    @Test
    void aBusyStreamOfShortRunsDoublesTheWaitUpToTheMost() {
        assertThat(afterShortRuns()).isEqualTo(40 * MS);
        assertThat(afterShortRuns()).isEqualTo(80 * MS);
        assertThat(afterShortRuns()).isEqualTo(160 * MS);
        assertThat(afterShortRuns()).isEqualTo(160 * MS);
    }

    @Test
    void aClaimThatTookPlentyGoesOnAtOnceAndKeepsTheWaitForTheNextThinOne() {
        afterShortRuns();
        afterShortRuns();
        assertThat(gathering.after(500, 1, false)).isZero();
        assertThat(gathering.after(160, 16, false)).isZero();
        assertThat(afterShortRuns()).isEqualTo(160 * MS);
    }

    @Test
    void aClaimThatTookAllTheLanesItMayLeavesOthersDueSoTheNextGoesAtOnce() {
        afterShortRuns();
        assertThat(gathering.after(32, 32, true)).isZero();
        assertThat(gathering.after(3, 1, true)).isZero();
        assertThat(afterShortRuns()).isEqualTo(80 * MS);
    }

    @Test
    void thinClaimsAfterABusySpellHalveTheWaitBackToTheLeast() {
        for (int i = 0; i < 5; i++) {
            afterShortRuns();
        }
        assertThat(gathering.after(2, 2, false)).isEqualTo(80 * MS);
        assertThat(afterOneItem()).isEqualTo(40 * MS);
        assertThat(afterOneItem()).isEqualTo(20 * MS);
        assertThat(afterOneItem()).isEqualTo(20 * MS);
    }

    @Test
    void aSingleLongRunIsNotThinWhateverItsLength() {
        assertThat(gathering.after(10, 1, false)).isZero();
    }

    @Test
    void itSaysItsRange() {
        assertThat(gathering).hasToString("20-160 ms");
        assertThat(new Gathering(Duration.ofMillis(50), Duration.ofMillis(10))).hasToString("50 ms");
    }

    @Test
    void noGatheringStaysNone() {
        Gathering none = new Gathering(Duration.ZERO, Duration.ofMillis(160));
        assertThat(none.after(1, 1, false)).isZero();
        assertThat(none.after(32, 16, false)).isZero();
    }
}
