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

/** {@code java -jar chat-intake.jar demo --exit}: the whole story runs, every step's check holds, and it cleans up. */
class DemoIT {
    @TempDir
    Path work;

    @Test
    void theDemoTellsTheWholeStoryAndLeavesNothingBehind() {
        RunnerProcess demo = RunnerProcess.start(work, Map.of(), "demo", "--exit");
        assertThat(demo.awaitExit(Duration.ofMinutes(5))).as(demo.output()).isZero();

        String output = demo.output();
        assertThat(output).contains("chat-intake demo: a one-minute story, told as it happens")
                .contains(" 3. Three people wrote to the bot. Each message was stored, then answered exactly once: ")
                .contains("\"Received: Hello!\"").contains("\"Received: Is my order on its way?\"").contains("\"Received: Thanks :)\"")
                .contains(" 4. A Telegram album of 3 photos came as 3 separate updates.")
                .contains("decided once (provisional, 3 children), and its 3 photos were downloaded into the media store.")
                .contains(" 5. A UnifyPort album said it had 2 pictures; when both were in it was decided at once (complete, 2 children)."
                        + " A third picture arrived later: a new version, late, 3 children")
                .contains(" 6. A webhook signed with the wrong secret was refused (401 {\"error\":\"bad_signature\"}); nothing of it was stored.")
                .contains("the runner was killed (kill -9) in the middle of it.")
                .contains("All 300 posts are stored exactly once and handled once")
                .contains(" 9. The story is over (--exit)")
                .doesNotContain("FAILED");
        Matcher dir = Pattern.compile("fresh embedded PostgreSQL in (\\S+)\\.").matcher(output);
        assertThat(dir.find()).isTrue();
        assertThat(Files.exists(Path.of(dir.group(1)))).as("the demo's temp directory is removed").isFalse();
        assertThat(ProcessHandle.allProcesses().filter(p -> p.info().commandLine().orElse("").contains(dir.group(1))))
                .as("no runner or PostgreSQL of the demo left running").isEmpty();
    }
}
