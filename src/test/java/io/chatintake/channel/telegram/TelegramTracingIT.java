package io.chatintake.channel.telegram;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.sim.BotApiSimulator;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.OtlpReceiver;
import io.chatintake.testkit.OtlpReceiver.ReceivedSpan;
import io.chatintake.testkit.RunnerProcess;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The packaged jar polling the Bot API simulator with tracing on: an update answered by the
 * echo route is one trace from its first span (linked to the poll batch's span) to the
 * {@code sendMessage} call, and no exported span holds the bot token, the text or the chat id.
 */
class TelegramTracingIT {
    private static final long BOT = 7731;
    private static final long CHAT = 91827364;
    private static final String TEXT = "tracing canary words from a person";

    @TempDir
    static Path work;
    private static BotApiSimulator simulator;
    private static OtlpReceiver otlp;
    private static RunnerProcess runner;
    private static String token;

    @BeforeAll
    static void start() throws Exception {
        simulator = BotApiSimulator.start();
        otlp = new OtlpReceiver();
        token = simulator.addBot(BOT, "FAKE-tracing-test-token-secret", "tracing_test_bot");
        Map<String, String> env = RunnerProcess.pollingEnv(work, simulator.url(), token);
        env.put("TELEGRAM_ECHO_REPLIES", "true");
        env.put("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.endpoint());
        env.put("OTEL_BSP_SCHEDULE_DELAY", "200");
        runner = RunnerProcess.start(work, env).awaitReady();
    }

    @AfterAll
    static void stop() {
        try {
            if (runner != null) {
                runner.close();
            }
        } finally {
            simulator.close();
            otlp.close();
        }
    }

    @Test
    void anEchoedUpdateIsOneTraceFromThePollBatchLinkToSendMessage() {
        simulator.enqueueText(token, CHAT, TEXT);
        Await.until("the echo sent", Duration.ofSeconds(60), () -> simulator.sentMessages(token).size() == 1);
        // The attempt ends after its sendMessage: both exported.
        Await.until("the sendMessage and attempt spans exported", Duration.ofSeconds(30),
                () -> otlp.spans().stream().anyMatch(s -> s.name().equals("telegram-bot sendMessage"))
                        && otlp.spans().stream().anyMatch(s -> s.name().equals("work telegram-update attempt 1")));

        ReceivedSpan send = otlp.spans().stream().filter(s -> s.name().equals("telegram-bot sendMessage")).findFirst().orElseThrow();
        assertThat(send.kind()).as("a client span").isEqualTo(3);
        assertThat(send.attribute("chat_intake.telegram.method")).isEqualTo("sendMessage");
        assertThat(send.attribute("chat_intake.effect.state")).isEqualTo("done");
        List<ReceivedSpan> trace = otlp.trace(send.traceId());
        ReceivedSpan update = trace.stream().filter(s -> s.name().equals("telegram update")).findFirst().orElseThrow();
        assertThat(update.parentSpanId()).as("the update starts its trace").isEmpty();
        assertThat(trace).as("the handler's attempt in the same trace").anyMatch(s -> s.name().equals("work telegram-update attempt 1"));
        Optional<ReceivedSpan> batch = otlp.spans().stream().filter(s -> s.name().equals("telegram poll batch")
                && update.linkedTraceIds().contains(s.traceId())).findFirst();
        assertThat(batch).as("the update's first span links to its poll batch").isPresent();
        assertThat(batch.get().traceId()).isNotEqualTo(send.traceId());

        for (ReceivedSpan span : otlp.spans()) {
            assertThat(span.raw()).as(span.name()).doesNotContain(token).doesNotContain("FAKE-tracing-test-token")
                    .doesNotContain(TEXT).doesNotContain("canary").doesNotContain(Long.toString(CHAT));
        }
    }
}
