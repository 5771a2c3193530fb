package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.chatintake.config.Secret;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.Browser;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.testkit.WebhookServer;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Find: {@code GET /status/messages} in a headless Chromium and {@code messages find|show} find
 * stored messages by each filter, and a message whose handler failed twice before its reply went
 * out shows both failures, the success and the reply in its timeline, its secret fields masked.
 * UnifyPort deliveries go through the real signed intake and work engine; the reply goes to a
 * loopback server.
 */
@ExtendWith(TestDatabase.class)
class MessagesFindTest {
    private static final String STATUS_TOKEN = "status-token-SECRET-find-0123456789ab";
    private static final String WEBHOOK_SECRET = "whsec-SECRET-find";
    private static final String MEDIA_SIGNATURE = "X-Amz-Signature=SECRETfindsig0123";
    private static final long BOT_ID = 77_001;

    private static WebhookServer server;
    private static HttpServer replies;
    private static final List<String> replied = new CopyOnWriteArrayList<>();
    private static Browser browser;
    private static Instant before;
    private static Instant after;
    private static String retried;
    private static String plain;
    private static String other;
    private static String telegram;

    @BeforeAll
    static void start() throws Exception {
        replies = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        replies.createContext("/reply", exchange -> {
            replied.add(new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
            byte[] answer = "{\"reply_id\":\"r-42\"}".getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, answer.length);
            exchange.getResponseBody().write(answer);
            exchange.close();
        });
        replies.start();
        Path routes = Files.createTempDirectory("find-routes");
        // The handler fails its first two attempts of the event marked "retried", then replies once, guarded.
        Files.writeString(routes.resolve("find-handler.yaml"), """
                - route:
                    id: find-unifyport-event
                    from:
                      uri: "work:unifyport-event"
                      steps:
                        - filter:
                            simple: "${header.ChatIntakeEventId} startsWith 'evt-find-retried' && ${header.WorkAttempt} < 3"
                            steps:
                              - throwException:
                                  exceptionType: java.lang.IllegalStateException
                                  message: "reply service down at attempt ${header.WorkAttempt}"
                        - policy:
                            id: reply
                            ref: guardedEffect
                            steps:
                              - setBody:
                                  constant: "thanks"
                              - to:
                                  uri: "http://127.0.0.1:%d/reply"
                              - convertBodyTo:
                                  type: java.lang.String
                """.formatted(replies.getAddress().getPort()));
        server = WebhookServer.startWithWork(TestDatabase.dataSource(), Map.of(StatusPage.TOKEN, STATUS_TOKEN,
                "unifyport.signing-secrets", WEBHOOK_SECRET, "unifyport.workspace", "ws-find"),
                "file:routes/unifyport-webhook.yaml,file:routes/albums.yaml,file:routes/handlers.yaml,file:" + routes + "/*.yaml");

        browser = Browser.start();
        browser.open(server.uri("/status?token=" + STATUS_TOKEN).toString());
    }

    /** The test database is emptied before each test: each starts with the same four messages, their work done. */
    @BeforeEach
    void messages(DataSource db) {
        replied.clear();
        before = Instant.now().minusSeconds(1);
        String run = Long.toString(System.nanoTime(), 36);
        retried = deliver("evt-find-retried-" + run, "conv-find-a-" + run, "sender-find-1-" + run, "where is my parcel " + run);
        plain = deliver("evt-find-plain-" + run, "conv-find-b-" + run, "sender-find-2-" + run, "opening hours " + run);
        other = deliver("evt-find-other-" + run, "conv-find-a-" + run, "sender-find-3-" + run, "thank you " + run);
        Sql.execute(db, "INSERT INTO telegram_checkpoint (bot_id, bot_name) VALUES (" + BOT_ID + ", 'find_bot') ON CONFLICT DO NOTHING");
        Sql.execute(db, "INSERT INTO telegram_update (bot_id, update_id, update_type, payload) VALUES (" + BOT_ID + ", 5501, 'message',"
                + " '{\"update_id\":5501,\"message\":{\"message_id\":1,\"date\":1,\"chat\":{\"id\":-100" + BOT_ID + "},"
                + "\"from\":{\"id\":4242},\"text\":\"telegram hello " + run + "\"}}')");
        telegram = "telegram-" + Sql.count(db, "SELECT id FROM telegram_update WHERE bot_id = " + BOT_ID + " AND update_id = 5501");
        // What scheduling its work copies for search.
        Sql.execute(db, "INSERT INTO telegram_update_text (update_row_id, text) SELECT id, telegram_text(payload) FROM telegram_update");
        after = Instant.now().plusSeconds(1);
        Await.until("the retried event's work done and the other two's", Duration.ofSeconds(90), () -> Sql.count(db,
                "SELECT count(*) FROM work_item w JOIN webhook_event e ON e.id = w.source_id AND w.kind = 'unifyport-event'"
                        + " WHERE e.event_id LIKE 'evt-find-%-" + run + "' AND w.state = 'done'") == 3);
    }

    @AfterAll
    static void stop() {
        if (browser != null) {
            browser.close();
        }
        if (server != null) {
            server.close();
        }
        if (replies != null) {
            replies.stop(0);
        }
    }

    /** Posts a signed UnifyPort message.received; @return its message key (webhook-N) */
    private static String deliver(String eventId, String conversation, String sender, String text) {
        String data = "{\"conversation\":{\"id\":\"" + conversation + "\",\"type\":\"user\"},\"sender\":{\"id\":\"" + sender + "\"},"
                + "\"message\":{\"id\":\"m-" + eventId + "\",\"type\":\"text\",\"text\":\"" + text + "\",\"reply_token\":\"rt-SECRET-"
                + eventId + "\",\"attachments\":[{\"type\":\"image\",\"url\":\"https://media.example/x.jpg?" + MEDIA_SIGNATURE + "\"}]}}";
        return deliver(eventId, data);
    }

    private static String deliver(String eventId, String data) {
        SignedDeliverySender client = new SignedDeliverySender(server.uri("/webhooks/unifyport"), Secret.of(WEBHOOK_SECRET));
        byte[] body = SignedDeliverySender.envelope(eventId, "message.received", "whatsapp", "acc-find", Instant.now(), data);
        assertThat(client.post(client.sign(eventId, body, TimestampForm.RFC3339)).status()).isEqualTo(200);
        return "webhook-" + Sql.count(TestDatabase.dataSource(), "SELECT id FROM webhook_event WHERE event_id = '" + eventId + "'");
    }

    @Test
    void thePageFindsMessagesByEachFilter(DataSource db) {
        assertThat(Sql.count(db, "SELECT count(*) FROM pg_indexes WHERE indexname IN ('telegram_update_text_trgm', 'channel_message_text')"))
                .as("the embedded PostgreSQL has pg_trgm: text contains has its indexes").isEqualTo(2);
        String run = suffix();
        assertThat(search(Map.of("channel", "unifyport", "conversation", "conv-find-a-" + run))).containsExactly(other, retried);
        assertThat(search(Map.of("bot", "find_bot"))).containsExactly(telegram);
        assertThat(search(Map.of("channel", "telegram", "conversation", "-100" + BOT_ID))).containsExactly(telegram);
        assertThat(search(Map.of("sender", "sender-find-2-" + run))).containsExactly(plain);
        assertThat(search(Map.of("sender", "4242", "bot", "find_bot"))).containsExactly(telegram);
        assertThat(search(Map.of("text", "OPENING HOURS " + run))).as("contains, case-insensitive").containsExactly(plain);
        assertThat(search(Map.of("text", run))).containsExactly(telegram, other, plain, retried);
        assertThat(search(Map.of("event", "evt-find-plain-" + run))).containsExactly(plain);
        assertThat(search(Map.of("event", "5501", "bot", "find_bot"))).containsExactly(telegram);
        assertThat(search(Map.of("text", run, "since", before.toString(), "until", after.toString()))).hasSize(4);
        assertThat(search(Map.of("text", run, "until", before.toString()))).as("nothing before the run").isEmpty();
        assertThat(search(Map.of("text", run, "since", "1h"))).as("an age").hasSize(4);

        // A page of one: "older" walks the rest, newest first, each row once.
        List<String> walked = new ArrayList<>();
        browser.open(server.uri("/status/messages?limit=1&text=" + run).toString());
        walked.addAll(rows(browser.html()));
        while (browser.has("older")) {
            browser.clickAndWait("older");
            walked.addAll(rows(browser.html()));
        }
        assertThat(walked).containsExactly(telegram, other, plain, retried);

        // Each row opens its timeline.
        search(Map.of("event", "evt-find-plain-" + run));
        browser.evaluate("document.querySelector('#message-" + plain + " a').click(); true");
        Await.until("the timeline open", Duration.ofSeconds(10), () -> browser.url().endsWith("/status/messages/" + plain));
        assertThat(browser.text()).contains("opening hours " + run).contains("Received and stored");
    }

    @Test
    void theTimelineOfAMessageRetriedTwiceShowsBothFailuresTheSuccessAndTheReply() {
        browser.open(server.uri("/status/messages/" + retried).toString());
        String text = browser.text();
        String html = browser.html();
        long item = Sql.count(TestDatabase.dataSource(), "SELECT w.id FROM work_item w WHERE w.kind = 'unifyport-event' AND w.source_id = "
                + retried.substring("webhook-".length()));
        assertThat(html).contains("id=\"run-" + item + "-1\"").contains("id=\"run-" + item + "-2\"").contains("id=\"run-" + item + "-3\"");
        assertThat(row(html, "run-" + item + "-1")).contains("failed").contains("reply service down at attempt 1");
        assertThat(row(html, "run-" + item + "-2")).contains("failed").contains("reply service down at attempt 2");
        assertThat(row(html, "run-" + item + "-3")).contains("done").contains(" ms");
        assertThat(text).contains("ws-find:unifyport:evt-find-retried-").contains(":reply").contains("r-42");
        assertThat(replied).as("one reply per message: the retried one's once").containsExactly("thanks", "thanks", "thanks");
        assertThat(row(html, "stored")).as("stored by a named process").contains("chat-intake");
        assertThat(html).as("secret fields masked").doesNotContain("rt-SECRET").doesNotContain(MEDIA_SIGNATURE.substring(16))
                .doesNotContain(STATUS_TOKEN).doesNotContain(WEBHOOK_SECRET).contains("[redacted]");
    }

    @Test
    void aChildsTimelineShowsItsAlbumAndTheAlbumsDecisions(DataSource db) {
        String run = suffix();
        List<String> children = new ArrayList<>();
        for (int index = 1; index <= 2; index++) {
            children.add(deliver("evt-find-album-" + index + "-" + run, "{\"conversation\":{\"id\":\"conv-album-" + run + "\"},"
                    + "\"sender\":{\"id\":\"s\"},\"message\":{\"id\":\"m-album-" + index + "-" + run + "\",\"type\":\"image\","
                    + "\"caption\":\"photo " + index + "\",\"album\":{\"id\":\"alb-" + run + "\",\"index\":" + index + ",\"total\":2}}}"));
        }
        Await.until("the album decided", Duration.ofSeconds(60), () -> Sql.count(db,
                "SELECT count(*) FROM album_decision d JOIN album a USING (album_key) WHERE a.album_id = 'alb-" + run + "'") == 1);

        browser.open(server.uri("/status/messages/" + children.get(1)).toString());
        String html = browser.html();
        assertThat(browser.text()).contains("(album alb-" + run + ")").contains("photo 2");
        assertThat(row(html, "decision-1")).contains("complete").contains("<td>2</td>");
        assertThat(cli("show", children.get(0))).contains("album ").contains("(album id alb-" + run + ")")
                .contains("decision v1 complete, 2 child(ren)");
    }

    @Test
    void aTelegramAlbumPartShowsItsAlbum(DataSource db) {
        // The rows Telegram intake and the album route write for a media group part, written here directly.
        long update = Long.parseLong(telegram.substring("telegram-".length()));
        Sql.execute(db, "INSERT INTO channel_message (workspace, provider, account_id, conversation_id, message_id, album_id, first_event_id)"
                + " VALUES ('default', 'telegram-bot', '" + BOT_ID + "', '-100" + BOT_ID + "', '1', 'group-9', 'telegram:" + BOT_ID + ":5501')");
        Sql.execute(db, "INSERT INTO album (album_key, workspace, provider, account_id, conversation_id, album_id, decided_version)"
                + " VALUES ('tg-album-key-9', 'default', 'telegram-bot', '" + BOT_ID + "', '-100" + BOT_ID + "', 'group-9', 1)");
        Sql.execute(db, "INSERT INTO album_decision (album_key, version, kind, child_ids, message_ids, totals_seen, indexes_seen, completed_by)"
                + " VALUES ('tg-album-key-9', 1, 'provisional', '[1, 2]', '[\"1\", \"2\"]', '[]', '[null, null]', 'timeout')");

        assertThat(cli("show", "telegram-" + update)).contains("album tg-album-key-9 (album id group-9)")
                .contains("decision v1 provisional, 2 child(ren), completed by timeout");
    }

    @Test
    void theSearchAndTimelinesNeedTheStatusPagesToken() throws Exception {
        HttpClient http = HttpClient.newHttpClient();
        for (String path : List.of("/status/messages?text=parcel", "/status/messages/" + retried)) {
            HttpResponse<String> anonymous = http.send(HttpRequest.newBuilder(server.uri(path)).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(anonymous.statusCode()).as(path).isEqualTo(401);
            assertThat(anonymous.body()).doesNotContain("parcel");
            HttpResponse<String> bearer = http.send(HttpRequest.newBuilder(server.uri(path)).header("Authorization", "Bearer " + STATUS_TOKEN)
                    .build(), HttpResponse.BodyHandlers.ofString());
            assertThat(bearer.statusCode()).as(path).isEqualTo(200);
            assertThat(bearer.body()).contains("where is my parcel").doesNotContain(STATUS_TOKEN);
            assertThat(bearer.headers().firstValue("Cache-Control")).contains("no-store");
        }
        HttpResponse<String> signIn = http.send(HttpRequest.newBuilder(server.uri("/status/messages?token=" + STATUS_TOKEN)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(signIn.statusCode()).isEqualTo(303);
        assertThat(signIn.headers().firstValue("Location")).as("back to the search, the token out of the address").contains("messages");
    }

    @Test
    void theCliFindsAndShowsTheSame() {
        String run = suffix();
        assertThat(cli("find", "--channel", "unifyport", "--conversation", "conv-find-a-" + run)).startsWith(other + " ")
                .contains(retried + " ").doesNotContain(plain + " ").contains("2 message(s)");
        assertThat(cli("find", "--bot", "find_bot")).contains(telegram + " ").contains("1 message(s)");
        assertThat(cli("find", "--sender", "sender-find-2-" + run)).contains(plain + " ").contains("1 message(s)");
        assertThat(cli("find", "--text", "opening HOURS " + run)).contains(plain + " ").contains("1 message(s)");
        assertThat(cli("find", "--event", "evt-find-other-" + run)).contains(other + " ").contains("1 message(s)");
        assertThat(cli("find", "--text", run, "--since", before.toString(), "--until", after.toString(), "--limit", "3"))
                .contains("3 message(s); older ones: --after ");
        assertThat(cli("find", "--text", run, "--until", before.toString())).contains("0 message(s)");

        String shown = cli("show", retried);
        assertThat(shown).containsPattern("attempt 1: failed \\(.*reply service down at attempt 1\\)")
                .containsPattern("attempt 2: failed \\(.*reply service down at attempt 2\\)").contains("attempt 3: done")
                .contains(":reply (item ").contains("done").contains("r-42").contains("stored by chat-intake")
                .doesNotContain("rt-SECRET").contains("[redacted]");
    }

    private static String suffix() {
        return Sql.string(TestDatabase.dataSource(), "SELECT substring(event_id FROM 'evt-find-retried-(.*)') FROM webhook_event WHERE id = "
                + retried.substring("webhook-".length()));
    }

    /** Fills the form in the browser, submits it, and returns the keys of the rows found, in order. */
    private static List<String> search(Map<String, String> filters) {
        browser.open(server.uri("/status/messages").toString());
        for (String field : MessagesView.FIELDS.keySet()) {
            browser.type("find-" + field, filters.getOrDefault(field, ""));
        }
        browser.clickAndWait("find-button");
        assertThat(browser.has("find-error")).as(browser.text()).isFalse();
        return rows(browser.html());
    }

    private static List<String> rows(String html) {
        List<String> keys = new ArrayList<>();
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("<tr id=\"message-((?:telegram|webhook)-\\d+)\"").matcher(html);
        while (m.find()) {
            keys.add(m.group(1));
        }
        return keys;
    }

    private static String row(String html, String id) {
        int start = html.indexOf("<tr id=\"" + id + "\"");
        assertThat(start).as(id).isNotNegative();
        return html.substring(start, html.indexOf("</tr>", start));
    }

    private static String cli(String... args) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        new MessagesCommand(TestDatabase.commandSettings(), new PrintStream(bytes, true, StandardCharsets.UTF_8)).run(List.of(args));
        return bytes.toString(StandardCharsets.UTF_8);
    }
}
