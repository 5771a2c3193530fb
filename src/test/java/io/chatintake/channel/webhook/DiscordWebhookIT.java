package io.chatintake.channel.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.chatintake.config.Secret;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.Response;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.KeyPairGenerator;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code routes/discord.yaml} and {@code routes/discord-handlers.yaml} in the packaged jar, with
 * follow-ups sent to a Discord API stand-in on loopback. Camel logs at DEBUG, so camel-http's own
 * line with the follow-up URL (token included) is written: the redactor must mask it.
 */
class DiscordWebhookIT {
    private static final String APP = "app_4711";
    /** Its follow-ups are answered 404, as for an expired token. */
    private static final String GONE_APP = "app_gone";
    private static final String STATUS_TOKEN = "status-page-token-discord-it-long-enough";

    @TempDir
    static Path work;
    private static RunnerProcess runner;
    private static DataSource db;
    private static SignedDeliverySender discord;
    private static HttpServer api;
    private static final List<String> followUpPaths = new CopyOnWriteArrayList<>();

    @BeforeAll
    static void start() throws Exception {
        api = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        api.createContext("/api/v10/webhooks/", exchange -> {
            followUpPaths.add(exchange.getRequestURI().getPath());
            exchange.getRequestBody().readAllBytes();
            boolean gone = exchange.getRequestURI().getPath().contains("/" + GONE_APP + "/");
            byte[] answer = (gone ? "{\"message\":\"Unknown Webhook\",\"code\":10015}" : "{\"id\":\"fmsg_" + followUpPaths.size() + "\"}")
                    .getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "application/json");
            exchange.sendResponseHeaders(gone ? 404 : 200, answer.length);
            exchange.getResponseBody().write(answer);
            exchange.close();
        });
        api.start();
        Map<String, String> env = RunnerProcess.baseEnv(work);
        env.put("CHAT_INTAKE_ROUTES_DIR", Path.of("routes").toAbsolutePath().toString());
        String retiredKey = HexFormat.of().formatHex(rawEd25519PublicKey());
        env.put("DISCORD_PUBLIC_KEYS", retiredKey + "," + PublicKeySchemesTest.RFC8032_PUBLIC_1);
        env.put("DISCORD_FOLLOW_UPS", "true");
        env.put("DISCORD_API_URL", "http://127.0.0.1:" + api.getAddress().getPort() + "/api/v10");
        env.put("CHAT_INTAKE_CAMEL_LOG_LEVEL", "DEBUG");
        env.put("WORK_POLL_INTERVAL_MILLIS", "100");
        env.put("CHAT_INTAKE_STATUS_TOKEN", STATUS_TOKEN);
        runner = RunnerProcess.start(work, env).awaitReady();
        db = RunnerProcess.embeddedDatabase(env);
        discord = new SignedDeliverySender(URI.create("http://127.0.0.1:" + runner.httpPort() + "/webhooks/discord"),
                Secret.of(PublicKeySchemesTest.RFC8032_SEED_1), SignatureScheme.ed25519());
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
        }
    }

    @Test
    void pingIsAnsweredPongAndNothingIsStored() {
        Response pong = discord.postSigned(bytes("{\"id\":\"1190000000000000001\",\"application_id\":\"" + APP + "\",\"type\":1,\"version\":1}"),
                "application/json");
        assertThat(pong.status()).isEqualTo(200);
        assertThat(pong.body()).isEqualTo("{\"type\":1}");
        assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event WHERE event_id = '1190000000000000001'")).isZero();
    }

    @Test
    void anInteractionDeliveredTwiceIsStoredOnceAndAnsweredDeferredBothTimes() {
        byte[] body = interaction("1190000000000000002", APP, 2, "tokTWICEaW50ZXJhY3Rpb24xMTkwMDAwMDAwMDAwMDAwMDAy");
        assertThat(discord.postSigned(body, "application/json").body()).isEqualTo("{\"type\":5}");
        Response again = discord.postSigned(body, "application/json");
        assertThat(again.status()).isEqualTo(200);
        assertThat(again.body()).isEqualTo("{\"type\":5}");
        assertThat(Sql.string(db, "SELECT event_type || ' ' || account_id || ' ' || delivery_count FROM webhook_event"
                + " WHERE channel = 'discord' AND event_id = '1190000000000000002'")).isEqualTo("2 " + APP + " 2");
        Await.until("its one follow-up sent", Duration.ofSeconds(30), () -> Sql.count(db,
                "SELECT count(*) FROM outbound_effect WHERE effect_key = 'default:discord:1190000000000000002:discord-follow-up' AND state = 'done'") == 1);
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'discord-event' AND source_key = 'default:discord:1190000000000000002'"))
                .isEqualTo(1);
    }

    @Test
    void aDeliverySignedWithAnotherKeyOrUnsignedIs401AndNothingIsStored() throws Exception {
        byte[] body = interaction("1190000000000000003", APP, 2, "tokWRONGaW50ZXJhY3Rpb24xMTkwMDAwMDAwMDAwMDAwMDAz");
        SignedDeliverySender impostor = new SignedDeliverySender(URI.create("http://127.0.0.1:" + runner.httpPort() + "/webhooks/discord"),
                Secret.of("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb"), SignatureScheme.ed25519());
        Response forged = impostor.postSigned(body, "application/json");
        assertThat(forged.status()).isEqualTo(401);
        assertThat(forged.body()).isEqualTo("{\"error\":\"bad_signature\"}");
        Response unsigned = discord.postRaw(body, "application/json", Map.of());
        assertThat(unsigned.status()).isEqualTo(401);
        assertThat(unsigned.body()).isEqualTo("{\"error\":\"missing_signature\"}");
        assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event WHERE event_id = '1190000000000000003'")).isZero();
    }

    @Test
    void sixteenConcurrentDeliveriesAreAllVerifiedAndStored() throws Exception {
        int clients = 16;
        ExecutorService pool = Executors.newFixedThreadPool(clients);
        try {
            CountDownLatch go = new CountDownLatch(1);
            List<Future<Response>> answers = new ArrayList<>();
            for (int i = 0; i < clients; i++) {
                byte[] body = interaction("11900000000000001" + (10 + i), APP, 2, "tokCONCURRENTaW50ZXJhY3Rpb24" + (10 + i) + "Zm9vYmFy");
                answers.add(pool.submit(() -> {
                    go.await();
                    return discord.postSigned(body, "application/json");
                }));
            }
            go.countDown();
            for (Future<Response> answer : answers) {
                Response response = answer.get();
                assertThat(response.status()).as(response.body()).isEqualTo(200);
                assertThat(response.body()).isEqualTo("{\"type\":5}");
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event WHERE channel = 'discord' AND event_id LIKE '11900000000000001__'"))
                .isEqualTo(clients);
    }

    @Test
    void theInteractionTokenIsInTheStoredEventAndNowhereElse() {
        String token = "aW50ZXJhY3Rpb246MTE5MDAwMDAwMDAwMDAwMDA1OlNFQ1JFVFRPS0VO";
        String goneToken = "aW50ZXJhY3Rpb246MTE5MDAwMDAwMDAwMDAwMDA2OkdPTkVUT0tFTg";
        byte[] click = bytes("{\"id\":\"1190000000000000005\",\"application_id\":\"" + APP + "\",\"type\":3,\"token\":\"" + token + "\","
                + "\"channel_id\":\"chan_1\",\"data\":{\"custom_id\":\"approve\"},\"message\":{\"id\":\"msg_1\",\"channel_id\":\"chan_1\","
                + "\"content\":\"Approve?\",\"timestamp\":\"2026-12-06T10:00:00.000000+00:00\"}}");
        assertThat(discord.postSigned(click, "application/json").body()).isEqualTo("{\"type\":5}");
        assertThat(discord.postSigned(interaction("1190000000000000006", GONE_APP, 2, goneToken), "application/json").body())
                .isEqualTo("{\"type\":5}");

        Await.until("both follow-ups settled", Duration.ofSeconds(30), () -> Sql.count(db, "SELECT count(*) FROM outbound_effect"
                + " WHERE effect_key IN ('default:discord:1190000000000000005:discord-follow-up',"
                + " 'default:discord:1190000000000000006:discord-follow-up') AND state IN ('done', 'undeliverable')") == 2);
        assertThat(followUpPaths).as("the handler used the token").contains("/api/v10/webhooks/" + APP + "/" + token,
                "/api/v10/webhooks/" + GONE_APP + "/" + goneToken);
        assertThat(Sql.string(db, "SELECT state || ' ' || result FROM outbound_effect WHERE effect_key = 'default:discord:1190000000000000005:discord-follow-up'"))
                .startsWith("done fmsg_");
        assertThat(Sql.string(db, "SELECT text FROM channel_message WHERE provider = 'discord' AND message_id = 'msg_1'")).isEqualTo("Approve?");

        for (String secret : List.of(token, goneToken)) {
            String hex = HexFormat.of().formatHex(secret.getBytes(StandardCharsets.UTF_8));
            List<String> holding = new ArrayList<>();
            for (List<Object> table : Sql.rows(db, "SELECT table_schema, table_name FROM information_schema.tables"
                    + " WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = 'BASE TABLE' ORDER BY table_name")) {
                String name = (String) table.get(1);
                // A whole row as text: bytea shows as hex, so both forms are looked for.
                long rows = Sql.count(db, "SELECT count(*) FROM \"" + table.get(0) + "\".\"" + name + "\" t"
                        + " WHERE strpos(t::text, '" + secret + "') > 0 OR strpos(t::text, '" + hex + "') > 0");
                if (rows > 0) {
                    holding.add(name + ":" + rows);
                }
            }
            assertThat(holding).as("tables holding the token").containsExactly("webhook_event:1");
            assertThat(runner.get("/observe/metrics").body()).doesNotContain(secret);
            String status = runner.get("/status", "Authorization", "Bearer " + STATUS_TOKEN).body();
            assertThat(status).as("the status page").contains("discord").doesNotContain(secret);
        }
        String output = runner.output();
        assertThat(output).as("camel-http's own DEBUG line, its URL masked")
                .contains("/api/v10/webhooks/" + APP + "/[redacted]")
                .contains("discord interaction 1190000000000000005 type 3 for application " + APP)
                .doesNotContain(token, goneToken);
    }

    private static byte[] interaction(String id, String application, int type, String token) {
        return bytes("{\"id\":\"" + id + "\",\"application_id\":\"" + application + "\",\"type\":" + type + ",\"token\":\"" + token
                + "\",\"channel_id\":\"chan_1\",\"data\":{\"name\":\"deploy\"},\"version\":1}");
    }

    private static byte[] rawEd25519PublicKey() throws Exception {
        byte[] x509 = KeyPairGenerator.getInstance("Ed25519").generateKeyPair().getPublic().getEncoded();
        // The raw key is the last 32 bytes of its X.509 form, as Discord shows it.
        return java.util.Arrays.copyOfRange(x509, x509.length - 32, x509.length);
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
