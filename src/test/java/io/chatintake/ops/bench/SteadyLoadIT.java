package io.chatintake.ops.bench;

import io.chatintake.testkit.RunnerProcess;
import java.time.Duration;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The steady mixed load of {@code bench soak} (Telegram texts over 500 chats, signed UnifyPort
 * deliveries with album children) through the real jar for 3 minutes: handling keeps up.
 */
class SteadyLoadIT {
    @BeforeAll
    static void benchesRunTheTestedJar() {
        System.setProperty("chat-intake.jar", RunnerProcess.jar().toString());
    }

    @Test
    void handlingKeepsUpWithASteadyMixedLoadWithAlbums() throws Exception {
        SoakVerdict verdict = new SoakBenchmark(System.out).measure(Duration.ofMinutes(3), SoakLoad.DEFAULT);

        SoftAssertions soft = new SoftAssertions();
        soft.assertThat(verdict.doneAfterLoad()).as("everything handled within 30 s of the end of the load").isNotNull();
        soft.assertThat(verdict.worstOldestPendingAfterFirstMinute()).as("the oldest pending item's age after the first minute, s")
                .isLessThanOrEqualTo(SoakVerdict.OLDEST_PENDING_LIMIT_SECONDS);
        soft.assertThat(verdict.claimsLostToItself()).as("the runner's \"%s\" lines", SoakBenchmark.CLAIM_LOST).isZero();
        soft.assertAll();
    }
}
