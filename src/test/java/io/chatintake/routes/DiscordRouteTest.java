package io.chatintake.routes;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.chatintake.channel.webhook.WebhookInboxConstants;
import io.chatintake.config.Settings;
import io.chatintake.testkit.LogCapture;
import io.chatintake.testkit.Sql;
import io.chatintake.work.EffectFailure;
import io.chatintake.work.EffectGuard;
import io.chatintake.work.GuardedEffect;
import io.chatintake.work.WorkConstants;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.camel.Exchange;
import org.apache.camel.builder.AdviceWith;
import org.apache.camel.spi.Registry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * routes/discord.yaml and discord-handlers.yaml: interactions signed with Ed25519 as Discord signs
 * them, a PING answered, the others stored and answered deferred, a bad signature 401; the handler
 * logs an interaction without its token and sends its follow-up once, to a Discord API on loopback.
 */
class DiscordRouteTest extends RouteTestSupport {
    private static final String COMPONENT = "{\"id\":\"1180000000000000002\",\"application_id\":\"app_1\",\"type\":3,"
            + "\"token\":\"tok_component_1\",\"channel_id\":\"chan_9\",\"data\":{\"custom_id\":\"approve\",\"component_type\":2},"
            + "\"message\":{\"id\":\"msg_7\",\"channel_id\":\"chan_9\",\"content\":\"Approve the deploy?\","
            + "\"timestamp\":\"2026-12-06T10:00:00.000000+00:00\"}}";

    // Static: the test kit reads settings() while constructing the test, before its fields are set.
    private static final KeyPair APPLICATION = ed25519();
    /** What the Discord API on loopback was sent: "path body". */
    private static final List<String> FOLLOW_UPS = new CopyOnWriteArrayList<>();
    private static final AtomicInteger API_STATUS = new AtomicInteger();
    private static final HttpServer DISCORD_API = discordApi();

    @Override
    protected Map<String, String> settings() {
        return Map.of("discord.public-keys", publicKeyHex(APPLICATION),
                "discord.follow-ups", "true",
                "discord.api-url", "http://127.0.0.1:" + DISCORD_API.getAddress().getPort() + "/api/v10");
    }

    @Override
    protected void bindBeans(Registry registry, Settings settings) {
        registry.bind(GuardedEffect.BEAN, new GuardedEffect(new EffectGuard(db)));
    }

    @BeforeEach
    void discordApiAnswersOk() {
        FOLLOW_UPS.clear();
        API_STATUS.set(200);
    }

    @AfterAll
    static void stopDiscordApi() {
        DISCORD_API.stop(0);
    }

    @Test
    void aPingIsAnsweredAnInteractionStoredAndAnsweredDeferredAndABadSignatureRefused() throws Exception {
        loadRoutes("routes/discord.yaml");
        AdviceWith.adviceWith(context, "discord-webhook", r -> r.replaceFromWith("direct:webhook"));
        context.start();

        Exchange pong = post(privateKey(APPLICATION), "{\"id\":\"1180000000000000001\",\"application_id\":\"app_1\",\"type\":1,\"version\":1}");
        assertThat(pong.getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE)).isEqualTo(200);
        assertThat(pong.getMessage().getBody(String.class)).isEqualTo("{\"type\":1}");
        assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event")).as("a PING is not stored").isZero();

        Exchange stored = post(privateKey(APPLICATION), COMPONENT);
        assertThat(stored.getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE)).isEqualTo(200);
        assertThat(stored.getMessage().getBody(String.class)).isEqualTo("{\"type\":5}");
        assertThat(post(privateKey(ed25519()), COMPONENT.replace("1180000000000000002", "1180000000000000003"))
                .getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE)).as("signed with another key").isEqualTo(401);

        assertThat(Sql.string(db, "SELECT string_agg(channel || ' ' || event_id || ' ' || event_type || ' ' || account_id, ', ') FROM webhook_event"))
                .isEqualTo("discord 1180000000000000002 3 app_1");
        deriveStoredEvents();
        assertThat(Sql.string(db, "SELECT provider || '/' || account_id || '/' || conversation_id || '/' || message_id || ' ' || text"
                + " FROM channel_message")).isEqualTo("discord/app_1/chan_9/msg_7 Approve the deploy?");
        assertThat(Sql.string(db, "SELECT kind FROM work_item UNION ALL SELECT kind FROM work_staged")).isEqualTo("discord-event");
    }

    @Test
    void theHandlerLogsNoTokenAndSendsTheFollowUpOnce() throws Exception {
        loadRoutes("routes/discord-handlers.yaml");
        handItemsTo("discord-event");
        context.start();

        try (LogCapture log = new LogCapture()) {
            assertThat(handle().getException()).isNull();
            assertThat(handle().getException()).as("the second time skipped, done already").isNull();
            assertThat(log.lines()).anyMatch(line -> line.contains(
                    "discord interaction 1180000000000000002 type 3 for application app_1 stored (row 1), work item 7"));
            assertThat(log.lines()).noneMatch(line -> line.contains("tok_component_1"));
        }
        assertThat(FOLLOW_UPS).as("sent once, with the token in the path only")
                .containsExactly("/api/v10/webhooks/app_1/tok_component_1 {\"content\":\"Received, working on it.\"}");
        assertThat(Sql.string(db, "SELECT effect_key || ' ' || state || ' ' || result FROM outbound_effect"))
                .isEqualTo("discord:1180000000000000002:discord-follow-up done msg_follow_up_1");
    }

    @Test
    void aFollowUpWhoseTokenExpiredIsUndeliverableAndNeverRetried() throws Exception {
        API_STATUS.set(404);
        loadRoutes("routes/discord-handlers.yaml");
        handItemsTo("discord-event");
        context.start();

        Exception refused = handle().getException();
        assertThat(refused).isInstanceOf(EffectFailure.class).hasMessageContaining("undeliverable").hasMessageNotContaining("tok_component_1");
        Exchange again = handle();

        assertThat(FOLLOW_UPS).as("sent once, never again").hasSize(1);
        assertThat(again.getException()).as("the second time skipped: its end is recorded").isNull();
        assertThat(Sql.string(db, "SELECT state || ' ' || coalesce(result, '') FROM outbound_effect"))
                .startsWith("undeliverable").doesNotContain("tok_component_1");
    }

    /** The stored interaction handed to the handler route, as the work dispatcher hands it. */
    private Exchange handle() {
        return template.send("direct:discord-event", exchange -> {
            exchange.getMessage().setBody(COMPONENT);
            exchange.getMessage().setHeaders(new HashMap<>(Map.of(WebhookInboxConstants.EVENT_ID, "1180000000000000002",
                    WebhookInboxConstants.EVENT_TYPE, "3", WebhookInboxConstants.ACCOUNT, "app_1", WebhookInboxConstants.STORED_ID, 1,
                    WorkConstants.WORK_ITEM_ID, 7, WorkConstants.IDEMPOTENCY_KEY, "discord:1180000000000000002")));
        });
    }

    private Exchange post(String privateKey, String json) {
        return postSigned("direct:webhook", "ed25519", privateKey, json);
    }

    private static HttpServer discordApi() {
        try {
            HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
            server.createContext("/", exchange -> {
                FOLLOW_UPS.add(exchange.getRequestURI().getPath() + " "
                        + new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
                byte[] answer = (API_STATUS.get() == 200 ? "{\"id\":\"msg_follow_up_1\"}" : "{\"message\":\"Unknown Webhook\"}")
                        .getBytes(StandardCharsets.UTF_8);
                exchange.getResponseHeaders().set("Content-Type", "application/json");
                exchange.sendResponseHeaders(API_STATUS.get(), answer.length);
                exchange.getResponseBody().write(answer);
                exchange.close();
            });
            server.start();
            return server;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static KeyPair ed25519() {
        try {
            return KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** As Discord shows an application's public key: hex of its 32 bytes (the end of the X.509 encoding). */
    private static String publicKeyHex(KeyPair pair) {
        byte[] encoded = pair.getPublic().getEncoded();
        return HexFormat.of().formatHex(Arrays.copyOfRange(encoded, encoded.length - 32, encoded.length));
    }

    private static String privateKey(KeyPair pair) {
        return Base64.getEncoder().encodeToString(pair.getPrivate().getEncoded());
    }
}
