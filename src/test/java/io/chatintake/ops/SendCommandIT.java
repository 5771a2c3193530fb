package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code send CHANNEL --file BODY} against a running runner with the shipped routes: each body
 * is signed as its channel's route verifies it, with the configured secret, and stored once.
 */
class SendCommandIT {
    private static final Duration WAIT = Duration.ofSeconds(60);

    @TempDir
    Path work;

    @Test
    void sendStoresOneUnifyPortAndOneSlackEvent() throws Exception {
        Map<String, String> env = RunnerProcess.baseEnv(work);
        env.put("CHAT_INTAKE_ROUTES_DIR", Path.of("routes").toAbsolutePath().toString());
        env.put("UNIFYPORT_SIGNING_SECRETS", "unifyport_send_secret_1");
        env.put("SLACK_SIGNING_SECRETS", "slack_send_secret_1");
        Path unifyport = Files.write(work.resolve("unifyport.json"), SignedDeliverySender.envelope("evt_send_1", "message.received",
                "whatsapp", "acc_1", Instant.now(), "{\"conversation\":{\"id\":\"conv_1\"},\"message\":{\"id\":\"msg_1\",\"type\":\"text\","
                        + "\"text\":\"hello\"}}"));
        Path slack = Files.writeString(work.resolve("slack.json"), "{\"team_id\":\"T1\",\"event_id\":\"Ev_send_1\",\"event_time\":"
                + Instant.now().getEpochSecond() + ",\"event\":{\"type\":\"message\",\"channel\":\"C1\",\"ts\":\"1.2\",\"text\":\"hi\"}}");

        try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
            assertThat(send(env, "unifyport", unifyport)).contains(": 200").contains("{\"status\":\"stored\"}");
            assertThat(send(env, "slack", slack)).contains(": 200").contains("{\"status\":\"stored\"}");

            assertThat(Sql.string(RunnerProcess.embeddedDatabase(env), "SELECT string_agg(channel || ' ' || event_id, ', ' ORDER BY channel)"
                    + " FROM webhook_event")).isEqualTo("slack Ev_send_1, unifyport evt_send_1");
        }
    }

    /** {@code java -jar chat-intake.jar send CHANNEL --file BODY} with the runner's configuration; its output. */
    private String send(Map<String, String> env, String channel, Path body) {
        Map<String, String> sendEnv = new HashMap<>(env);
        // Its own data dir: closing a RunnerProcess stops any PostgreSQL left in its data dir, the runner's here.
        sendEnv.put("CHAT_INTAKE_DATA_DIR", work.resolve("send-data").toString());
        try (RunnerProcess send = RunnerProcess.start(work, sendEnv, "send", channel, "--file", body.toString())) {
            assertThat(send.awaitExit(WAIT)).as(send.output()).isZero();
            return send.output();
        }
    }
}
