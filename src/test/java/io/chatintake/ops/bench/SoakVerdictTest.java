package io.chatintake.ops.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** How bench soak judges a run. */
class SoakVerdictTest {
    private static final Duration FIVE_MINUTES = Duration.ofMinutes(5);

    @Test
    void aRunThatKeptUpMeetsEveryTarget() {
        SoakVerdict verdict = new SoakVerdict(FIVE_MINUTES, 60_000, 59_900, 1.5, Duration.ofSeconds(2), 0);

        assertThat(verdict.targets()).allMatch(SoakVerdict.Target::met);
        assertThat(verdict.met()).isTrue();
        assertThat(verdict.intakeRate()).isEqualTo(200.0);
        assertThat(verdict.handledRate()).isCloseTo(199.67, within(0.01));
    }

    @Test
    void handlingThatTrailsIntakeByMoreThanFivePercentIsMissed() {
        SoakVerdict atTheLimit = new SoakVerdict(FIVE_MINUTES, 60_000, 57_000, 1, Duration.ZERO, 0);
        SoakVerdict below = new SoakVerdict(FIVE_MINUTES, 60_000, 56_999, 1, Duration.ZERO, 0);

        assertThat(atTheLimit.met()).isTrue();
        assertThat(below.met()).isFalse();
        assertThat(below.targets().get(0).line()).contains("0.950x").endsWith("NOT met");
    }

    @Test
    void anItemOlderThanTenSecondsAfterTheFirstMinuteIsMissed() {
        assertThat(new SoakVerdict(FIVE_MINUTES, 100, 100, 10.0, Duration.ZERO, 0).met()).isTrue();
        assertThat(new SoakVerdict(FIVE_MINUTES, 100, 100, 10.1, Duration.ZERO, 0).targets().get(1).met()).isFalse();
    }

    @Test
    void workNotDoneWithinThirtySecondsOfTheEndIsMissed() {
        SoakVerdict notDone = new SoakVerdict(FIVE_MINUTES, 100, 100, 0, null, 0);

        assertThat(notDone.met()).isFalse();
        assertThat(notDone.targets().get(2).line()).contains("not within 30 s").endsWith("NOT met");
        assertThat(new SoakVerdict(FIVE_MINUTES, 100, 100, 0, Duration.ofSeconds(30), 0).met()).isTrue();
    }

    @Test
    void aSingleClaimLostToItsOwnRunnerIsMissed() {
        SoakVerdict lost = new SoakVerdict(FIVE_MINUTES, 100, 100, 0, Duration.ZERO, 1);

        assertThat(lost.met()).isFalse();
        assertThat(lost.targets().get(3).line()).contains("1 \"released or taken over\" line(s)");
    }

    @Test
    void noIntakeAtAllIsNotCountedAsHandlingFallingBehind() {
        assertThat(new SoakVerdict(FIVE_MINUTES, 0, 0, 0, Duration.ZERO, 0).targets().get(0).met()).isTrue();
    }
}
