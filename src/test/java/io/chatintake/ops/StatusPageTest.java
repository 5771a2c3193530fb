package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Secret;
import io.chatintake.config.Settings;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import io.chatintake.testkit.HeadlessChromium;
import io.chatintake.testkit.LogCapture;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.testkit.WebhookServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * GET /status over the real platform-http server, on a database seeded with known figures: the
 * page a real headless Chromium renders shows them (and a screenshot is kept under target/); the
 * token rules (off -> 404, wrong -> 401, bearer or a session opened by the query -> 200); no secret of the configuration
 * on the page or in its headers.
 */
@ExtendWith(TestDatabase.class)
class StatusPageTest {
    private static final String STATUS_TOKEN = "status-token-SECRET-5b1e-long-enough-32";
    private static final String WEBHOOK_SECRET = "whsec-SECRET-status-page";
    private static final Map<String, String> SECRETS = Map.of(
            "telegram.bot-token", "111:SECRET-main-bot-token",
            "telegram.bots.sales.token", "222:SECRET-sales-bot-token",
            "unifyport.signing-secrets", WEBHOOK_SECRET,
            "media.s3.secret-access-key", "SECRET-s3-key-on-the-status-page",
            StatusPage.TOKEN, STATUS_TOKEN);

    private static WebhookServer on;
    private static WebhookServer off;
    private final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    static void start() {
        DataSource db = TestDatabase.dataSource();
        Map<String, String> settings = new HashMap<>(SECRETS);
        settings.put("unifyport.workspace", "ws-status");
        on = WebhookServer.start(db, settings, "file:routes/unifyport-webhook.yaml",
                Map.of("statusPageRoute", StatusPage.route(Settings.of(settings), db)));
        off = WebhookServer.start(db, Map.of(), "file:routes/hello.yaml",
                Map.of("statusPageRoute", StatusPage.route(Settings.of(Map.of()), db)));
    }

    @AfterAll
    static void stop() {
        on.close();
        off.close();
    }

    @Test
    void aRealBrowserShowsTheSeededFiguresAndAScreenshotIsKept(DataSource db) throws Exception {
        seed(db);
        // One refused delivery: a body signed with the wrong secret.
        SignedDeliverySender forger = new SignedDeliverySender(on.uri("/webhooks/unifyport"), Secret.of("not-the-secret"));
        byte[] body = SignedDeliverySender.envelope("evt_forged", "message.received", "whatsapp", "acc", Instant.now(), "{}");
        assertThat(forger.post(forger.sign("evt_forged", body, TimestampForm.RFC3339)).status()).isEqualTo(401);
        String url = on.uri("/status?token=" + STATUS_TOKEN).toString();

        String dom = HeadlessChromium.dumpDom(url);

        // The overview first (what needs a person, counted, then its graphs), then the sections the nav jumps to, in its order.
        List<String> sections = List.of("overview", "messages", "work", "albums", "bots", "processes", "graphs");
        List<Integer> at = sections.stream().map(id -> dom.indexOf("<section id=\"" + id + "\"")).toList();
        assertThat(at).doesNotContain(-1).isSorted();
        assertThat(dom.indexOf("<nav id=\"nav\">")).isBetween(0, at.get(0));
        sections.forEach(id -> assertThat(dom).contains("<a href=\"#" + id + "\">"));
        String overview = dom.substring(at.get(0), at.get(1));
        assertThat(overview).contains("id=\"attention\"").contains("id=\"graph-minute-overview-stored\"")
                .contains("id=\"graph-hour-overview-oldest-waiting\"")
                .contains("id=\"count-parked-items\" class=\"count warn\"><b>3</b> parked items")
                .contains("id=\"count-albums-needing-a-person\" class=\"count warn\"><b>1</b> albums needing a person")
                .contains("id=\"count-bots-not-polling\" class=\"count warn\"><b>1</b> bots not polling")
                .contains("id=\"count-unmapped-deliveries\" class=\"count warn\"><b>1</b> unmapped deliveries")
                .contains("id=\"count-effects-to-settle\" class=\"count\"><b>0</b> effects to settle");

        List<String> main = cells(dom, "bot-main");
        assertThat(main).hasSize(11);
        assertThat(main.subList(0, 4)).containsExactly("main", "111", "polling", "5001");
        assertThat(seconds(main.get(5))).as("lag: seeded 30 s ago").isBetween(30L, 100L);
        assertThat(main.get(4)).endsWith(main.get(5) + " ago)");
        assertThat(main.subList(7, 9)).containsExactly("4321", "host-a:42:abcd");
        assertThat(main.get(9)).startsWith("1, the last until ").endsWith("(24 h ago)");
        assertThat(main.get(10)).isEqualTo("1, the last: updates 4990..4994");
        assertThat(dom).contains("bot main: updates 4990..4994 were confirmed outside this store");
        assertThat(cells(dom, "bot-sales")).contains("no active poller", "77", "host-b:43:ef01 (expired)", "none");
        assertThat(cells(dom, "channel-unifyport-ws-status")).element(1).isEqualTo("on");
        assertThat(cells(dom, "channel-unifyport-ws-status").get(2)).matches(".*\\((9\\d|1\\d\\d) s ago\\)");
        assertThat(cells(dom, "channel-unifyport-ws-status").get(3)).isEqualTo("401 bad_signature: 1");
        assertThat(cells(dom, "channel-unifyport-ws-status").get(4)).as("unmapped deliveries").isEqualTo("1");
        assertThat(cells(dom, "work-telegram-update-pending")).containsExactly("telegram-update", "pending", "7",
                cells(dom, "work-telegram-update-pending").get(3));
        assertThat(cells(dom, "work-telegram-update-pending").get(3)).matches(".*\\((9|1[01]) min ago\\)");
        assertThat(cells(dom, "work-telegram-update-running")).contains("2");
        assertThat(cells(dom, "work-unifyport-event-parked")).contains("3");
        assertThat(dom).contains("handler said &lt;b&gt;no&lt;/b&gt;").doesNotContain("<b>no</b>");
        assertThat(cells(dom, "albums")).element(0).isEqualTo("2");
        assertThat(cells(dom, "albums")).element(2).isEqualTo("1");
        assertThat(cells(dom, "attachments-pending")).containsExactly("pending", "4", "4");
        assertThat(cells(dom, "attachments-stored")).containsExactly("stored", "-", "5");
        assertThat(cells(dom, "attachments-failed")).containsExactly("failed", "1", "1");
        assertThat(cells(dom, "process-host-c:44:ab12")).last().as("not held back: nothing said").isEqualTo("alive");
        assertThat(cells(dom, "process-host-d:45:cd34")).last().asString()
                .matches("alive, handling held back for intake since \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC \\(4[0-4] s\\)");
        assertThat(dom).contains("host-c").contains("3 work item(s) parked").contains("1 album(s) need a person")
                .contains("<meta http-equiv=\"refresh\" content=\"10\">");
        SECRETS.values().forEach(secret -> assertThat(dom).doesNotContain(secret));

        Path png = Path.of("target", "status-page.png");
        Files.deleteIfExists(png);
        HeadlessChromium.screenshot(url, png, 1280, 1600);
        byte[] image = Files.readAllBytes(png);
        assertThat(image.length).isGreaterThan(10_000);
        assertThat(new String(image, 1, 3, StandardCharsets.US_ASCII)).isEqualTo("PNG");
    }

    @Test
    void offWithoutATokenAndTheTokenIsRequiredAsBearerOrASessionFromTheQuery() throws Exception {
        HttpResponse<String> offAnswer = get(off.uri("/status"), null);
        assertThat(offAnswer.statusCode()).isEqualTo(404);
        assertThat(offAnswer.body()).contains("CHAT_INTAKE_STATUS_TOKEN");

        try (LogCapture log = new LogCapture()) {
            assertThat(get(on.uri("/status"), null).statusCode()).isEqualTo(401);
            assertThat(get(on.uri("/status?token=wrong-SECRET-guess"), null).statusCode()).isEqualTo(401);
            assertThat(get(on.uri("/status"), "Bearer " + STATUS_TOKEN + "x").statusCode()).isEqualTo(401);
            assertThat(get(on.uri("/status"), "Basic " + STATUS_TOKEN).statusCode()).isEqualTo(401);
            List<String> refusals = log.lines().stream().filter(l -> l.contains("status page: 401")).toList();
            assertThat(refusals).as("one line for a burst of refusals").hasSize(1);
            assertThat(String.join("\n", log.lines())).doesNotContain(STATUS_TOKEN).doesNotContain("SECRET-guess");
        }

        HttpResponse<String> bearer = get(on.uri("/status"), "Bearer " + STATUS_TOKEN);
        HttpResponse<String> signIn = get(on.uri("/status?token=" + STATUS_TOKEN), null);
        assertThat(signIn.statusCode()).as("the token leaves the URL: a session cookie stands for it").isEqualTo(303);
        String cookie = signIn.headers().firstValue("Set-Cookie").orElseThrow();
        HttpResponse<String> session = http.send(HttpRequest.newBuilder(on.uri("/status"))
                .header("Cookie", cookie.substring(0, cookie.indexOf(';'))).build(), HttpResponse.BodyHandlers.ofString());
        for (HttpResponse<String> ok : List.of(bearer, session)) {
            assertThat(ok.statusCode()).isEqualTo(200);
            assertThat(ok.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("text/html"));
            assertThat(ok.body()).contains("chat-intake status");
            SECRETS.values().forEach(secret -> assertThat(ok.body()).doesNotContain(secret));
            assertThat(ok.headers().map().toString()).as("no request header echoed").doesNotContain(STATUS_TOKEN);
        }
    }

    private HttpResponse<String> get(URI uri, String authorization) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(uri).GET();
        if (authorization != null) {
            request.header("Authorization", authorization);
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static long seconds(String figure) {
        assertThat(figure).matches("\\d+ s");
        return Long.parseLong(figure.substring(0, figure.indexOf(' ')));
    }

    /** The texts of the cells of the row with this id. */
    static List<String> cells(String dom, String rowId) {
        Matcher row = Pattern.compile("<tr id=\"" + Pattern.quote(rowId) + "\">(.*?)</tr>").matcher(dom);
        assertThat(row.find()).as("row " + rowId + " on the page").isTrue();
        List<String> cells = new ArrayList<>();
        Matcher cell = Pattern.compile("<td>(.*?)</td>").matcher(row.group(1));
        while (cell.find()) {
            cells.add(cell.group(1).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"));
        }
        return cells;
    }

    /** Known figures in every table the page reads. */
    private static void seed(DataSource db) {
        Sql.execute(db, """
                INSERT INTO telegram_checkpoint (bot_id, bot_name, next_offset, last_poll_at, last_batch_at, stored_count)
                VALUES (111, 'main', 5001, now() - interval '30 seconds', now() - interval '60 seconds', 4321),
                       (222, 'sales', 77, now() - interval '2 hours', now() - interval '3 hours', 12);
                INSERT INTO telegram_poll_lease (bot_id, holder, fencing_token, expires_at)
                VALUES (111, 'host-a:42:abcd', 3, now() + interval '30 seconds'),
                       (222, 'host-b:43:ef01', 1, now() - interval '1 hour');
                INSERT INTO telegram_loss_window (bot_id, from_time, to_time)
                VALUES (111, now() - interval '3 days', now() - interval '1 day');
                INSERT INTO telegram_gap (bot_id, from_update_id, to_update_id) VALUES (111, 4990, 4994);
                INSERT INTO webhook_event (workspace, channel, event_id, body, received_at, last_received_at, parse_error)
                VALUES ('ws-status', 'unifyport', 'e0', '\\x00', now() - interval '2 hours', now() - interval '2 hours', 'unmapped');
                INSERT INTO webhook_event (workspace, channel, event_id, body, received_at, last_received_at)
                VALUES ('ws-status', 'unifyport', 'e1', '\\x00', now() - interval '1 hour', now() - interval '1 hour'),
                       ('ws-status', 'unifyport', 'e2', '\\x00', now() - interval '90 seconds', now() - interval '90 seconds');
                INSERT INTO work_item (kind, source_key, source_id, state, next_attempt_at, last_error)
                SELECT 'telegram-update', 'tu:' || i, i, 'pending', now() - interval '10 minutes' + i * interval '1 second', NULL
                  FROM generate_series(1, 7) i;
                INSERT INTO work_item (kind, source_key, source_id, state, claimed_by)
                SELECT 'telegram-update', 'tr:' || i, i, 'running', 'host-a' FROM generate_series(1, 2) i;
                INSERT INTO work_item (kind, source_key, source_id, state, attempts, last_error)
                SELECT 'unifyport-event', 'up:' || i, i, 'parked', 8, 'handler said <b>no</b>' FROM generate_series(1, 3) i;
                INSERT INTO work_item (kind, source_key, source_id, state, done_at)
                SELECT 'telegram-update', 'td:' || i, i, 'done', now() FROM generate_series(1, 50) i;
                INSERT INTO album (album_key, workspace, provider, account_id, conversation_id, album_id, decided_version, decided_at,
                                   needs_person, decide_after)
                VALUES ('a1', 'ws', 'p', 'acc', 'c', 'a1', 0, NULL, false, now() + interval '1 hour'),
                       ('a2', 'ws', 'p', 'acc', 'c', 'a2', 0, NULL, false, now() + interval '1 hour'),
                       ('a3', 'ws', 'p', 'acc', 'c', 'a3', 1, now(), true, NULL),
                       ('a4', 'ws', 'p', 'acc', 'c', 'a4', 1, now(), false, NULL);
                INSERT INTO channel_message (workspace, provider, account_id, conversation_id, message_id, first_event_id)
                VALUES ('ws', 'p', 'acc', 'c', 'm1', 'e1');
                INSERT INTO message_attachment (channel_message_id, position, source, status)
                SELECT (SELECT id FROM channel_message), i,
                       'url', CASE WHEN i <= 4 THEN 'pending' WHEN i <= 9 THEN 'stored' WHEN i = 10 THEN 'failed' ELSE 'expired' END
                  FROM generate_series(1, 12) i;
                INSERT INTO runner_start (host, pid, version) VALUES ('host-c', 44, 'dev'), ('host-d', 45, 'dev');
                INSERT INTO runner_heartbeat (process_id, host, pid, beat_at, held_back_since)
                VALUES ('host-c:44:ab12', 'host-c', 44, now(), NULL),
                       ('host-a', 'host-a', 42, now() + interval '1 hour', NULL),
                       ('host-d:45:cd34', 'host-d', 45, now(), now() - interval '40 seconds');
                """);
    }
}
