package io.chatintake.work;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Secret;
import io.chatintake.sim.BotApiSimulator;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What an operator reads while expected failures happen, in the real jar with the shipped routes:
 * replies answered 429, a chat that blocked the bot, an attachment whose URL refuses the
 * connection until its item is parked. Each retry is one line, nothing prints Camel's message
 * history or a stack trace, except the parked item, once.
 */
class FailureLogShapeIT {
    private static final Duration WAIT = Duration.ofMinutes(3);
    private static final String SECRET = "log_shape_secret_9b1";
    private static final Pattern LOG_LINE = Pattern.compile("^\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2}\\.\\d{3} +[A-Z]+ .*");

    @TempDir
    Path work;

    @Test
    void expectedFailuresAreOneLineEachAndOnlyTheParkedItemShowsItsStackOnce() throws Exception {
        try (BotApiSimulator simulator = BotApiSimulator.start()) {
            String token = simulator.addBot(899, "FAKE-log-shape-token", "log_shape_bot");
            Map<String, String> env = RunnerProcess.pollingEnv(work, simulator.url(), token);
            env.put("TELEGRAM_ECHO_REPLIES", "true");
            env.put("UNIFYPORT_SIGNING_SECRETS", SECRET);
            env.put("WORK_MAX_ATTEMPTS", "3");
            env.put("WORK_BACKOFF_BASE_MILLIS", "100");
            env.put("WORK_BACKOFF_CAP_MILLIS", "400");
            // The refusing server is on loopback: let the attachment guard through, so the connection itself fails.
            env.put("ATTACHMENTS_ALLOWED_HOSTS", "127.0.0.1");
            env.put("ATTACHMENTS_ALLOW_HTTP", "true");
            simulator.rateLimitSends(token, 0.3, 1);
            simulator.blockChat(token, 66);
            try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
                DataSource db = RunnerProcess.embeddedDatabase(env);
                for (int i = 0; i < 10; i++) {
                    simulator.enqueueText(token, 60 + i % 7, "text " + i);
                }
                String refused = "http://127.0.0.1:" + RunnerProcess.freePort() + "/f/photo.jpg";
                byte[] body = SignedDeliverySender.envelope("evt_log_shape", "message.received", "whatsapp", "acc_1", Instant.now(),
                        "{\"conversation\":{\"id\":\"c1\",\"type\":\"user\"},\"message\":{\"id\":\"m1\",\"type\":\"image\","
                                + "\"attachments\":[{\"url\":\"" + refused + "\"}]}}");
                SignedDeliverySender sender = new SignedDeliverySender(
                        URI.create("http://127.0.0.1:" + runner.httpPort() + "/webhooks/unifyport"), Secret.of(SECRET));
                assertThat(sender.post(sender.sign("evt_log_shape", body, TimestampForm.RFC3339)).status()).isEqualTo(200);

                Await.until("the replies done and the attachment parked", WAIT, () -> Sql.count(db,
                        "SELECT count(*) FROM work_item WHERE kind = 'telegram-update' AND state = 'done'") == 10
                        && Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'parked'") == 1);
                // Chat 66 blocked the bot: its one text is refused 403, the others' 429s are the rest.
                assertThat(simulator.sendAttempts(token).size() - simulator.sentMessages(token).size() - 1)
                        .as("some replies were answered 429").isPositive();

                List<String> lines = Arrays.asList(runner.output().split("\\R"));
                List<String> retries = lines.stream().filter(l -> l.contains("failed, next attempt at")).toList();
                assertThat(retries).as("the attachment's two retries, one line each").hasSize(2)
                        .allSatisfy(l -> assertThat(l).contains(" INFO ").contains("attachment").contains("attempt "));
                assertThat(lines).filteredOn(l -> l.contains("told to retry after")).as("each 429 one INFO line").isNotEmpty()
                        .allSatisfy(l -> assertThat(l).contains(" INFO ").contains("chat "));
                assertThat(lines).filteredOn(l -> l.contains("undeliverable, ends done")).as("the blocked chat's text")
                        .hasSize(1);
                assertThat(lines).filteredOn(l -> l.contains("Message History")).as("only the parked item's history").hasSize(1);
                assertThat(lines).filteredOn(l -> l.contains(" ERROR ")).isEmpty();
                int parked = indexOf(lines, "parked after its last attempt");
                assertThat(lines.get(parked)).contains(" WARN ");
                int history = indexOf(lines, "Message History");
                assertThat(history).as("the parked line carries the history").isGreaterThan(parked);
                // Every line that is not a log line (a stack frame, a history row) belongs to the parked item's block.
                int blockEnd = parked + 1;
                while (blockEnd < lines.size() && !LOG_LINE.matcher(lines.get(blockEnd)).matches()) {
                    blockEnd++;
                }
                for (int i = 0; i < lines.size(); i++) {
                    if (i <= parked || i >= blockEnd) {
                        assertThat(lines.get(i)).as("line %d is not a stack frame", i).doesNotStartWith("\tat ");
                    }
                }
                assertThat(String.join("\n", lines)).doesNotContain(token).doesNotContain(SECRET);
            }
        }
    }

    private static int indexOf(List<String> lines, String text) {
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).contains(text)) {
                return i;
            }
        }
        throw new AssertionError("no line contains '" + text + "'");
    }
}
