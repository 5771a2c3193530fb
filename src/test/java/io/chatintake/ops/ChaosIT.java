package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.RunnerProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code java -jar chat-intake.jar chaos 45}: three runners on one database under kill -9 for 45 s
 * (shorter than the command's default two minutes, to keep the suite fast), then every check holds,
 * the verdict says so with exit code 0, and nothing is left behind.
 */
class ChaosIT {
    @TempDir
    Path work;

    @Test
    void threeRunnersKilledAtRandomLoseNothingAndDoNothingTwice() {
        RunnerProcess chaos = RunnerProcess.start(work, Map.of(), "chaos", "45");
        int exit = chaos.awaitExit(Duration.ofMinutes(6));
        String output = chaos.output();
        assertThat(exit).as(output).isZero();
        assertThat(output).contains("chaos verdict: PASSED")
                .contains("[ok] One poller per bot at every instant: ")
                .contains("no two processes' polls in flight at once, at most 1 waiting at once, 0 polls displaced (409)")
                .contains("[ok] Every Telegram update stored exactly once")
                .contains("[ok] Every UnifyPort event stored exactly once")
                .contains("[ok] Every text answered exactly once")
                .contains("[ok] Every album decided once per version with all its children")
                .contains("[ok] Every work item done once")
                .doesNotContain("[FAILED]");

        Matcher kills = Pattern.compile("Chaos over after 45 s: (\\d+) kills .*, (\\d+) of them of the runner holding the poll lease")
                .matcher(output);
        assertThat(kills.find()).as(output).isTrue();
        assertThat(Integer.parseInt(kills.group(1))).as("runners killed").isGreaterThanOrEqualTo(6);
        assertThat(Integer.parseInt(kills.group(2))).as("kills of the poller").isGreaterThanOrEqualTo(1);
        Matcher pollers = Pattern.compile("getUpdates \\(besides the faulted ones\\) from (\\d+) processes").matcher(output);
        assertThat(pollers.find()).as(output).isTrue();
        assertThat(Integer.parseInt(pollers.group(1))).as("processes that polled, one after another").isGreaterThanOrEqualTo(2);
        Matcher sent = Pattern.compile("Sent (\\d+) texts .*?, (\\d+) UnifyPort events \\((\\d+) albums").matcher(output);
        assertThat(sent.find()).as(output).isTrue();
        assertThat(Integer.parseInt(sent.group(1))).as("texts sent").isGreaterThan(100);
        assertThat(Integer.parseInt(sent.group(3))).as("UnifyPort albums sent").isGreaterThan(3);

        Matcher dir = Pattern.compile("Started PostgreSQL in (\\S+),").matcher(output);
        assertThat(dir.find()).isTrue();
        assertThat(Files.exists(Path.of(dir.group(1)))).as("the chaos run's temp directory is removed").isFalse();
        assertThat(ProcessHandle.allProcesses().filter(p -> p.info().commandLine().orElse("").contains(dir.group(1))))
                .as("no runner or PostgreSQL of the chaos run left running").isEmpty();
    }
}
