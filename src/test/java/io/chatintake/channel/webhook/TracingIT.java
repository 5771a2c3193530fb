package io.chatintake.channel.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.chatintake.config.Secret;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.Response;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.OtlpReceiver;
import io.chatintake.testkit.OtlpReceiver.ReceivedSpan;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The packaged jar with tracing on (OTLP/HTTP to {@link OtlpReceiver}): a signed Discord delivery
 * that carries a {@code traceparent} gives spans of that trace from the request through storage,
 * the handler's attempt and its guarded {@code http:} follow-up, whose receiver gets a
 * {@code traceparent} of the same trace; no exported span holds the interaction token, the
 * signature or the message's text.
 */
class TracingIT {
    private static final String APP = "app_trace";
    private static final String TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
    private static final String CALLER = "00-" + TRACE_ID + "-00f067aa0ba902b7-01";
    private static final String TOKEN = "aW50ZXJhY3Rpb246VFJBQ0VEOlNFQ1JFVFRPS0VOWFla";
    private static final String TEXT = "Deploy the tracing canary now";

    @TempDir
    static Path work;
    private static RunnerProcess runner;
    private static DataSource db;
    private static OtlpReceiver otlp;
    private static HttpServer api;
    private static SignedDeliverySender discord;
    private static SignedDeliverySender unifyport;
    private static final String UNIFYPORT_SECRET = "unifyport_trace_secret";
    private static final String CAPTION = "Holiday photos from the tracing album";
    private static final List<String> downstreamTraceparents = new CopyOnWriteArrayList<>();

    @BeforeAll
    static void start() throws Exception {
        otlp = new OtlpReceiver();
        api = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        api.createContext("/api/v10/webhooks/", exchange -> {
            exchange.getRequestBody().readAllBytes();
            String traceparent = exchange.getRequestHeaders().getFirst("traceparent");
            downstreamTraceparents.add(traceparent == null ? "none" : traceparent);
            byte[] answer = "{\"id\":\"fmsg_1\"}".getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "application/json");
            exchange.sendResponseHeaders(200, answer.length);
            exchange.getResponseBody().write(answer);
            exchange.close();
        });
        api.start();
        Map<String, String> env = RunnerProcess.baseEnv(work);
        env.put("CHAT_INTAKE_ROUTES_DIR", Path.of("routes").toAbsolutePath().toString());
        env.put("DISCORD_PUBLIC_KEYS", PublicKeySchemesTest.RFC8032_PUBLIC_1);
        env.put("UNIFYPORT_SIGNING_SECRETS", UNIFYPORT_SECRET);
        env.put("DISCORD_FOLLOW_UPS", "true");
        env.put("DISCORD_API_URL", "http://127.0.0.1:" + api.getAddress().getPort() + "/api/v10");
        env.put("WORK_POLL_INTERVAL_MILLIS", "100");
        env.put("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.endpoint());
        env.put("OTEL_SERVICE_NAME", "chat-intake-it");
        env.put("OTEL_BSP_SCHEDULE_DELAY", "200");
        runner = RunnerProcess.start(work, env).awaitReady();
        db = RunnerProcess.embeddedDatabase(env);
        discord = new SignedDeliverySender(URI.create("http://127.0.0.1:" + runner.httpPort() + "/webhooks/discord"),
                Secret.of(PublicKeySchemesTest.RFC8032_SEED_1), SignatureScheme.ed25519());
        unifyport = new SignedDeliverySender(URI.create("http://127.0.0.1:" + runner.httpPort() + "/webhooks/unifyport"),
                Secret.of(UNIFYPORT_SECRET));
    }

    @AfterAll
    static void stop() {
        try {
            if (runner != null) {
                runner.close();
                assertThat(runner.output()).as("no stack trace in the whole run").doesNotContain("\tat ");
            }
        } finally {
            if (api != null) {
                api.stop(0);
            }
            if (otlp != null) {
                otlp.close();
            }
        }
    }

    @Test
    void aSignedDeliveryWithATraceparentIsOneTraceFromTheRequestToTheGuardedCall() {
        byte[] body = ("{\"id\":\"1190000000000000901\",\"application_id\":\"" + APP + "\",\"type\":3,\"token\":\"" + TOKEN + "\","
                + "\"channel_id\":\"chan_9\",\"data\":{\"custom_id\":\"deploy\"},\"message\":{\"id\":\"msg_9\",\"channel_id\":\"chan_9\","
                + "\"content\":\"" + TEXT + "\",\"timestamp\":\"2026-12-06T10:00:00.000000+00:00\"}}").getBytes(StandardCharsets.UTF_8);
        Map<String, String> headers = new LinkedHashMap<>(discord.signatureHeaders(body, Instant.now()));
        String signature = String.join(" ", headers.values());
        headers.put("traceparent", CALLER);
        Response answer = discord.postRaw(body, "application/json", headers);
        assertThat(answer.status()).as(answer.body()).isEqualTo(200);

        Await.until("the follow-up sent", Duration.ofSeconds(60), () -> Sql.count(db,
                "SELECT count(*) FROM outbound_effect WHERE effect_key = 'default:discord:1190000000000000901:discord-follow-up' AND state = 'done'") == 1);
        assertThat(Sql.string(db, "SELECT trace_context FROM work_item WHERE source_key = 'default:discord:1190000000000000901'"))
                .as("the work row holds the delivery's trace").startsWith("00-" + TRACE_ID + "-");
        assertThat(downstreamTraceparents).hasSize(1);
        assertThat(downstreamTraceparents.get(0)).as("the downstream call continues the caller's trace").startsWith("00-" + TRACE_ID + "-");

        Await.until("the attempt's span exported", Duration.ofSeconds(30),
                () -> otlp.trace(TRACE_ID).stream().anyMatch(s -> s.name().equals("work discord-event attempt 1")));
        List<ReceivedSpan> trace = otlp.trace(TRACE_ID);
        ReceivedSpan attempt = trace.stream().filter(s -> s.name().equals("work discord-event attempt 1")).findFirst().orElseThrow();
        assertThat(attempt.attribute("chat_intake.work.outcome")).isEqualTo("done");
        assertThat(attempt.service()).isEqualTo("chat-intake-it");
        assertThat(trace).as("the request's span continues the caller's").anyMatch(s -> s.parentSpanId().equals("00f067aa0ba902b7"));
        assertThat(trace).as("a client span for the guarded http call").anyMatch(s -> s.kind() == 3 /* CLIENT */);
        assertThat(trace.stream().map(ReceivedSpan::spanId)).as("the follow-up's span is what the receiver was told")
                .contains(downstreamTraceparents.get(0).split("-")[2]);

        for (ReceivedSpan span : otlp.spans()) {
            assertThat(span.raw()).as(span.name()).doesNotContain(TOKEN).doesNotContain(TEXT).doesNotContain("Deploy the")
                    .doesNotContain(signature).doesNotContain("chan_9");
        }
    }

    @Test
    void aThreeChildAlbumIsADecisionSpanLinkedToTheTracesOfItsThreeChildren() {
        List<String> childTraces = new ArrayList<>();
        for (int index = 1; index <= 3; index++) {
            String traceId = "a1b2c3d4e5f60718293a4b5c6d7e8f0" + index;
            childTraces.add(traceId);
            String eventId = "evt_traced_album_" + index;
            String data = "{\"conversation\":{\"id\":\"conv_traced\",\"type\":\"user\"},\"sender\":{\"id\":\"u_traced\",\"type\":\"user\"},"
                    + "\"message\":{\"id\":\"m_traced_" + index + "\",\"type\":\"image\",\"caption\":\"" + CAPTION + "\",\"direction\":\"in\","
                    + "\"sent_at\":\"2026-12-07T09:15:00Z\",\"album\":{\"id\":\"alb_traced\",\"index\":" + index + ",\"total\":3}}}";
            byte[] body = SignedDeliverySender.envelope(eventId, "message.received", "whatsapp", "acc_traced", Instant.now(), data);
            SignedDeliverySender.Delivery signed = unifyport.sign(eventId, body, SignedDeliverySender.TimestampForm.RFC3339);
            Map<String, String> headers = new LinkedHashMap<>();
            headers.put("X-Device-Event-Id", signed.eventId());
            headers.put("X-Device-Delivery-Id", signed.deliveryId());
            headers.put("X-Device-Timestamp", signed.timestamp());
            headers.put("X-Device-Signature", signed.signature());
            headers.put("traceparent", "00-" + traceId + "-00f067aa0ba9020" + index + "-01");
            Response answer = unifyport.postRaw(body, "application/json", headers);
            assertThat(answer.status()).as(answer.body()).isEqualTo(200);
        }

        Await.until("the album decision's span exported", Duration.ofSeconds(60),
                () -> otlp.spans().stream().anyMatch(s -> s.name().equals("album decision") && s.linkedTraceIds().size() == 3));
        ReceivedSpan decision = otlp.spans().stream().filter(s -> s.name().equals("album decision") && s.linkedTraceIds().size() == 3)
                .findFirst().orElseThrow();
        assertThat(decision.linkedTraceIds()).as("linked to each child's trace").containsExactlyInAnyOrderElementsOf(childTraces);
        assertThat(decision.attribute("chat_intake.album.decision")).isEqualTo("complete");
        assertThat(decision.attribute("chat_intake.album.children")).isEqualTo("3");
        assertThat(Sql.string(db, "SELECT w.trace_context FROM work_item w JOIN album_decision d ON w.kind = 'album-decision'"
                + " AND w.source_id = d.id WHERE d.album_key LIKE '%alb_traced%'"))
                .as("the decision's work travels in the decision's trace").startsWith("00-" + decision.traceId() + "-");
        Await.until("the decision's handler attempt in that trace", Duration.ofSeconds(60),
                () -> otlp.trace(decision.traceId()).stream().anyMatch(s -> s.name().equals("work album-decision attempt 1")));
        for (String child : childTraces) {
            assertThat(otlp.trace(child)).as("the child's own trace reaches its album-child attempt")
                    .anyMatch(s -> s.name().equals("work album-child attempt 1"));
        }

        for (ReceivedSpan span : otlp.spans()) {
            assertThat(span.raw()).as(span.name()).doesNotContain(CAPTION).doesNotContain("conv_traced").doesNotContain("u_traced")
                    .doesNotContain(UNIFYPORT_SECRET);
        }
    }
}
