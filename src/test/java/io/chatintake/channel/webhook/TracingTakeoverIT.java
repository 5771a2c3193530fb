package io.chatintake.channel.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.chatintake.config.Secret;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.OtlpReceiver;
import io.chatintake.testkit.OtlpReceiver.ReceivedSpan;
import io.chatintake.testkit.RunnerProcess;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A handler whose guarded call fails twice (429 without Retry-After: retried, counted) in one
 * runner, which is then killed; another runner on the same database takes the item over and
 * succeeds: three attempt spans in the delivery's one trace, exported by two processes.
 */
class TracingTakeoverIT {
    private static final String TRACE_ID = "0af7651916cd43dd8448eb211c80319c";

    @TempDir
    Path work;

    @Test
    void attemptsInTwoProcessesBelongToTheDeliverysTrace() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        AtomicBoolean succeed = new AtomicBoolean();
        HttpServer api = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        api.createContext("/api/v10/webhooks/", exchange -> {
            exchange.getRequestBody().readAllBytes();
            calls.incrementAndGet();
            byte[] answer = (succeed.get() ? "{\"id\":\"fmsg_ok\"}" : "{\"message\":\"rate limited\"}")
                    .getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "application/json");
            exchange.sendResponseHeaders(succeed.get() ? 200 : 429, answer.length);
            exchange.getResponseBody().write(answer);
            exchange.close();
        });
        api.start();
        try (OtlpReceiver otlp = new OtlpReceiver()) {
            Map<String, String> env = RunnerProcess.baseEnv(work);
            env.put("CHAT_INTAKE_ROUTES_DIR", Path.of("routes").toAbsolutePath().toString());
            env.put("DISCORD_PUBLIC_KEYS", PublicKeySchemesTest.RFC8032_PUBLIC_1);
            env.put("DISCORD_FOLLOW_UPS", "true");
            env.put("DISCORD_API_URL", "http://127.0.0.1:" + api.getAddress().getPort() + "/api/v10");
            env.put("WORK_POLL_INTERVAL_MILLIS", "100");
            // Slow enough retries that the runner is killed between the second attempt and a third.
            env.put("WORK_BACKOFF_BASE_MILLIS", "3000");
            env.put("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.endpoint());
            env.put("OTEL_BSP_SCHEDULE_DELAY", "100");
            env.put("OTEL_SERVICE_NAME", "runner-a");
            RunnerProcess a = RunnerProcess.start(work, env).awaitReady();
            try {
                SignedDeliverySender discord = new SignedDeliverySender(URI.create("http://127.0.0.1:" + a.httpPort() + "/webhooks/discord"),
                        Secret.of(PublicKeySchemesTest.RFC8032_SEED_1), SignatureScheme.ed25519());
                byte[] body = ("{\"id\":\"1190000000000000951\",\"application_id\":\"app_takeover\",\"type\":2,"
                        + "\"token\":\"aW50ZXJhY3Rpb246VEFLRU9WRVI\",\"channel_id\":\"chan_t\",\"data\":{\"name\":\"deploy\"},\"version\":1}")
                        .getBytes(StandardCharsets.UTF_8);
                Map<String, String> headers = new LinkedHashMap<>(discord.signatureHeaders(body, Instant.now()));
                headers.put("traceparent", "00-" + TRACE_ID + "-b7ad6b7169203331-01");
                assertThat(discord.postRaw(body, "application/json", headers).status()).isEqualTo(200);
                Await.until("two refused attempts exported", Duration.ofSeconds(60), () -> attempts(otlp, "runner-a").size() == 2);
            } finally {
                a.kill9();
            }
            succeed.set(true);
            env.put("OTEL_SERVICE_NAME", "runner-b");
            try (RunnerProcess b = RunnerProcess.start(work, env).awaitReady()) {
                Await.until("the attempt of runner b exported", Duration.ofSeconds(90), () -> !attempts(otlp, "runner-b").isEmpty());
            }
            List<ReceivedSpan> ofA = attempts(otlp, "runner-a");
            List<ReceivedSpan> ofB = attempts(otlp, "runner-b");
            assertThat(ofA).extracting(ReceivedSpan::name).containsExactly("work discord-event attempt 1", "work discord-event attempt 2");
            assertThat(ofA).extracting(s -> s.attribute("chat_intake.work.outcome")).containsOnly("retried");
            assertThat(ofB).singleElement().satisfies(s -> {
                assertThat(s.name()).isEqualTo("work discord-event attempt 3");
                assertThat(s.attribute("chat_intake.work.outcome")).isEqualTo("done");
            });
            // camel-http's client repeats a 429 once by itself: two calls per refused attempt.
            assertThat(calls.get()).isEqualTo(5);
        } finally {
            api.stop(0);
        }
    }

    private static List<ReceivedSpan> attempts(OtlpReceiver otlp, String service) {
        return otlp.trace(TRACE_ID).stream().filter(s -> s.service().equals(service) && s.name().startsWith("work discord-event attempt"))
                .sorted((x, y) -> x.name().compareTo(y.name())).toList();
    }
}
