package io.chatintake.work;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class GatheringTest {
    private static final long MS = 1_000_000;
    private final Gathering gathering = new Gathering(Duration.ofMillis(20), Duration.ofMillis(160));

    @Test
    void workArrivingOneItemAtATimeGathersTheLeast() {
        assertThat(gathering.after(1, 1)).isEqualTo(20 * MS);
        assertThat(gathering.after(9, 3)).isEqualTo(20 * MS);
    }

    @Test
    void aBusyStreamOfShortRunsDoublesTheWaitUpToTheMost() {
        assertThat(gathering.after(64, 32)).isEqualTo(40 * MS);
        assertThat(gathering.after(64, 32)).isEqualTo(80 * MS);
        assertThat(gathering.after(64, 32)).isEqualTo(160 * MS);
        assertThat(gathering.after(64, 32)).isEqualTo(160 * MS);
    }

    @Test
    void aClaimThatTookPlentyGoesOnAtOnceAndKeepsTheWaitForTheNextThinOne() {
        gathering.after(64, 32);
        gathering.after(64, 32);
        assertThat(gathering.after(500, 1)).isZero();
        assertThat(gathering.after(320, 32)).isZero();
        assertThat(gathering.after(64, 32)).isEqualTo(160 * MS);
    }

    @Test
    void thinClaimsAfterABusySpellHalveTheWaitBackToTheLeast() {
        for (int i = 0; i < 5; i++) {
            gathering.after(64, 32);
        }
        assertThat(gathering.after(2, 2)).isEqualTo(80 * MS);
        assertThat(gathering.after(1, 1)).isEqualTo(40 * MS);
        assertThat(gathering.after(1, 1)).isEqualTo(20 * MS);
        assertThat(gathering.after(1, 1)).isEqualTo(20 * MS);
    }

    @Test
    void aSingleLongRunIsNotThinWhateverItsLength() {
        assertThat(gathering.after(10, 1)).isZero();
    }

    @Test
    void itSaysItsRange() {
        assertThat(gathering).hasToString("20-160 ms");
        assertThat(new Gathering(Duration.ofMillis(50), Duration.ofMillis(10))).hasToString("50-50 ms");
    }

    @Test
    void noGatheringStaysNone() {
        Gathering none = new Gathering(Duration.ZERO, Duration.ofMillis(160));
        assertThat(none.after(1, 1)).isZero();
        assertThat(none.after(64, 32)).isZero();
    }
}
