package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.chatintake.config.Secret;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.support.MeterRegistryLookup;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.Browser;
import io.chatintake.testkit.HeadlessChromium;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.testkit.WebhookServer;
import java.net.InetSocketAddress;
import java.net.URI;
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
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The status page as an operator on call uses it, in a real headless Chromium, over two processes
 * sharing one database: the graphs after traffic through the signed-delivery sender, the buttons
 * (retry, settle an effect, resolve an album, pause and resume) doing what the CLI does and recording who, the
 * refusals of forged or cross-site posts, and no secret in anything served.
 */
@ExtendWith(TestDatabase.class)
class StatusConsoleTest {
    private static final String STATUS_TOKEN = "status-token-SECRET-console-7f3a";
    private static final String WEBHOOK_SECRET = "whsec-SECRET-console";
    private static final String MEDIA_SIGNATURE = "X-Amz-Signature=SECRETmediasig0123";
    private static final Map<String, String> SECRETS = Map.of(
            StatusPage.TOKEN, STATUS_TOKEN,
            "unifyport.signing-secrets", WEBHOOK_SECRET,
            "telegram.bot-token", "333:SECRET-console-bot-token",
            "media.s3.secret-access-key", "SECRET-s3-key-console");
    private static final String OPERATOR = "Alice O'Call";

    private static WebhookServer first;
    private static WebhookServer second;
    private static Browser browser;
    /** Every body served to the browser or to this test: none may hold a secret. */
    private static final List<String> served = new CopyOnWriteArrayList<>();
    private static final AtomicInteger events = new AtomicInteger();
    private final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    static void start() {
        DataSource db = TestDatabase.dataSource();
        Map<String, String> settings = new HashMap<>(SECRETS);
        settings.put("unifyport.workspace", "ws-console");
        first = WebhookServer.startWithWork(db, settings, "file:routes/unifyport-*.yaml");
        second = WebhookServer.startWithWork(db, settings, "file:routes/unifyport-*.yaml");
        browser = Browser.start();
        browser.open(first.uri("/status?token=" + STATUS_TOKEN).toString());
        assertThat(browser.url()).as("the token leaves the address bar").isEqualTo(first.uri("/status").toString());
        browser.type("operator-name", OPERATOR);
        browser.clickAndWait("operator-save");
        assertThat(browser.html()).contains("Actions are recorded as done by");
    }

    @AfterAll
    static void stop() {
        if (browser != null) {
            browser.close();
        }
        first.close();
        second.close();
    }

    @BeforeEach
    void page() {
        browser.open(first.uri("/status").toString());
    }

    @Test
    void graphsShowTheMinutesThatHadTrafficAndEveryProcessShowsTheSameHistory(DataSource db) throws Exception {
        // What earlier tests counted goes in now, and out: the history starts empty.
        for (WebhookServer server : List.of(first, second)) {
            server.context().hasService(StatusHistory.class).sample(MeterRegistryLookup.of(server.context()));
        }
        Sql.execute(db, "DELETE FROM status_rollup");
        Instant from = dbNow(db);
        for (int i = 0; i < 5; i++) {
            deliver(first);
        }
        for (int i = 0; i < 3; i++) {
            deliver(second);
        }
        Await.until("8 deliveries stored and done, in the history of both processes", Duration.ofSeconds(90),
                () -> history(db, "stored", "unifyport/ws-console") == 8 && history(db, "done", "work unifyport-event") == 8);
        Instant to = dbNow(db);

        browser.open(first.uri("/status").toString());
        String onFirst = served(browser.html());
        browser.open(second.uri("/status?token=" + STATUS_TOKEN).toString());
        String onSecond = served(browser.html());

        for (String graph : List.of("graph-minute-unifyport-ws-console-stored", "graph-minute-work-unifyport-event-done")) {
            Graph minutes = graph(onFirst, graph);
            assertThat(minutes.values()).hasSize(60);
            assertThat(minutes.sum()).as(graph + ": every delivery counted once, over both processes").isEqualTo(8);
            long firstMinute = ChronoUnit.MINUTES.between(minutes.from(), from.truncatedTo(ChronoUnit.MINUTES));
            long lastMinute = ChronoUnit.MINUTES.between(minutes.from(), to.truncatedTo(ChronoUnit.MINUTES));
            for (int i = 0; i < 60; i++) {
                if (i < firstMinute || i > lastMinute) {
                    assertThat(minutes.values().get(i)).as(graph + ": minute " + i + " had no traffic").isZero();
                }
            }
            assertThat(minutes.values().subList((int) firstMinute, (int) lastMinute + 1)).as(graph).anyMatch(v -> v > 0);
            assertThat(graph(onSecond, graph)).as("the second process draws the same history").isEqualTo(minutes);
            String hourGraph = graph.replace("graph-minute-", "graph-hour-");
            Graph hours = graph(onFirst, hourGraph);
            assertThat(hours.values()).hasSize(168);
            assertThat(hours.sum()).isEqualTo(8);
            assertThat(hours.values().subList(0, 166)).as("nothing before the last two hours").allMatch(v -> v == 0);
            assertThat(graph(onSecond, hourGraph)).isEqualTo(hours);
        }
        assertThat(graph(onFirst, "graph-minute-overview-stored").sum()).as("the overview: every channel").isEqualTo(8);
        assertThat(graph(onFirst, "graph-minute-overview-handled").sum()).as("the overview: every kind").isEqualTo(8);
        assertThat(onFirst).as("a series at zero all week folds into one line, with no graph of its own")
                .containsPattern("<p id=\"graphs-flat\"[^>]*>flat at zero over the last 7 days: [^<]*work unifyport-event failed")
                .doesNotContain("id=\"graph-minute-work-unifyport-event-failed\"").contains("max ");

        // The README's picture: the graphs, a parked item with its button, the processes.
        parkedItem(db, "handler said no: the CRM answered 500 for https://crm.example/contacts?" + MEDIA_SIGNATURE);
        browser.open(first.uri("/status").toString());
        Path png = Path.of("target", "status-console.png");
        browser.screenshot(png);
        assertThat(Files.size(png)).isGreaterThan(10_000);
        // What a person sees first on a laptop screen: the overview (src/main/docs/status-page.png is this picture).
        Path firstScreen = Path.of("target", "status-page-1280x800.png");
        HeadlessChromium.screenshot(first.uri("/status?token=" + STATUS_TOKEN).toString(), firstScreen, 1280, 800);
        assertThat(Files.size(firstScreen)).isGreaterThan(10_000);
    }

    @Test
    void retryClickedOnAParkedItemRunsItToDoneAndRecordsWho(DataSource db) throws Exception {
        long item = parkedItem(db, "handler said no: fetching https://media.example/a.jpg?" + MEDIA_SIGNATURE + " failed");
        browser.open(first.uri("/status").toString());
        String before = served(browser.html());
        assertThat(before).contains("id=\"parked-" + item + "\"").contains("https://media.example/a.jpg?[redacted]")
                .doesNotContain(MEDIA_SIGNATURE);

        browser.clickAndWait("retry-" + item);

        Await.until("the retried item done", Duration.ofSeconds(60),
                () -> Sql.string(db, "SELECT state FROM work_item WHERE id = " + item).equals("done"));
        assertThat(Sql.rows(db, "SELECT acted_by, action, target FROM operator_action"))
                .containsExactly(List.of(OPERATOR, "retry", "work item " + item));
        assertThat(Sql.count(db, "SELECT count(*) FROM operator_action WHERE acted_at > now() - interval '1 minute'")).isEqualTo(1);
        String after = served(browser.html());
        assertThat(after).contains("work item " + item + " back to pending").contains(OPERATOR);
    }

    @Test
    void retryAllOfAKindPutsEveryParkedItemOfItBack(DataSource db) throws Exception {
        long one = parkedItem(db, "no");
        long two = parkedItem(db, "no");
        browser.open(first.uri("/status").toString());

        browser.clickAndWait("retry-kind-unifyport-event");

        Await.until("both items done", Duration.ofSeconds(60),
                () -> Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'done' AND id IN (" + one + ", " + two + ")") == 2);
        assertThat(Sql.rows(db, "SELECT acted_by, action, outcome FROM operator_action"))
                .containsExactly(List.of(OPERATOR, "retry-kind", "2 parked item(s) of kind unifyport-event back to pending"));
    }

    @Test
    void aFilteredRetryShowsTheCountToConfirmThenRunsAndIsRecordedOnceWithItsFilter(DataSource db) throws Exception {
        long one = parkedItem(db, "quota exceeded at the CRM");
        long two = parkedItem(db, "quota exceeded at the CRM");
        long other = parkedItem(db, "no");
        browser.open(first.uri("/status").toString());

        browser.type("act-error", "quota exceeded");
        browser.clickAndWait("act-on-many-count");

        assertThat(browser.text()).contains("2 item(s) match error~\"quota exceeded\": retry them?");
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'parked'")).as("counting changes nothing").isEqualTo(3);
        browser.clickAndWait("act-confirm-button");

        Await.until("both matching items done", Duration.ofSeconds(60),
                () -> Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'done' AND id IN (" + one + ", " + two + ")") == 2);
        assertThat(Sql.string(db, "SELECT state FROM work_item WHERE id = " + other)).isEqualTo("parked");
        assertThat(Sql.rows(db, "SELECT acted_by, action, filter, item_count, state FROM operator_action"))
                .containsExactly(List.of(OPERATOR, "retry-filtered", "error~\"quota exceeded\"", 2L, "done"));
        browser.open(first.uri("/status").toString());
        assertThat(browser.text()).contains("2 back to pending (filter: error~\"quota exceeded\")");
    }

    @Test
    void anEffectSettledAsPerformedIsRecordedWithTheNameAndItsItemRunsToDone(DataSource db) throws Exception {
        long item = parkedItem(db, "effect unifyport:reply started and never recorded: awaiting reconciliation");
        String key = "up:" + item + ":reply";
        Sql.execute(db, "INSERT INTO outbound_effect (effect_key, work_item_id, state, started_at, result) VALUES ('" + key + "', "
                + item + ", 'started', now() - interval '5 minutes', 'timed out after https://media.example/b?" + MEDIA_SIGNATURE + "')");
        browser.open(first.uri("/status").toString());
        assertThat(served(browser.html())).contains("id=\"effect-" + key + "\"").doesNotContain(MEDIA_SIGNATURE);

        browser.clickAndWait("performed-" + key);

        assertThat(Sql.rows(db, "SELECT state, resolved_by, resolved_at IS NOT NULL FROM outbound_effect"))
                .containsExactly(List.of("done", OPERATOR, true));
        Await.until("its item done", Duration.ofSeconds(60),
                () -> Sql.string(db, "SELECT state FROM work_item WHERE id = " + item).equals("done"));
        assertThat(Sql.rows(db, "SELECT acted_by, action, target FROM operator_action"))
                .containsExactly(List.of(OPERATOR, "settle-effect", "effect " + key));
        assertThat(served(browser.html())).contains("recorded performed (done) by " + OPERATOR)
                .doesNotContain("id=\"effect-" + key + "\"");
    }

    @Test
    void anEffectSettledAsNotPerformedIsRecordedFailedAndItsItemRunsAgain(DataSource db) throws Exception {
        long item = parkedItem(db, "effect started and never recorded: awaiting reconciliation");
        String key = "up:" + item + ":crm";
        Sql.execute(db, "INSERT INTO outbound_effect (effect_key, work_item_id, state) VALUES ('" + key + "', " + item + ", 'started')");
        browser.open(first.uri("/status").toString());

        browser.clickAndWait("not-performed-" + key);

        assertThat(Sql.rows(db, "SELECT state, resolved_by FROM outbound_effect")).containsExactly(List.of("failed", OPERATOR));
        Await.until("its item done", Duration.ofSeconds(60),
                () -> Sql.string(db, "SELECT state FROM work_item WHERE id = " + item).equals("done"));
        assertThat(browser.text()).contains("recorded not performed (failed) by " + OPERATOR);
    }

    @Test
    void parkedItemsBeyondTheFirstPageAreOneLinkAway(DataSource db) {
        Sql.execute(db, """
                INSERT INTO work_item (kind, source_key, source_id, state, attempts, last_error)
                SELECT 'nobody-handles-this', 'p:' || i, i, 'parked', 8, 'no' FROM generate_series(1, 25) i""");
        browser.open(first.uri("/status").toString());
        assertThat(rows(browser.html(), "parked-")).isEqualTo(20);

        browser.clickAndWait("parked-page-older");

        assertThat(rows(browser.html(), "parked-")).isEqualTo(5);
        assertThat(browser.text()).contains("21-25 of 25");
        assertThat(browser.has("parked-page-newer")).isTrue();
    }

    private static long rows(String html, String idPrefix) {
        return Pattern.compile("<tr id=\"" + idPrefix + "\\d+\"").matcher(html).results().count();
    }

    @Test
    void anAlbumIsResolvedByItsButtonWithTheName(DataSource db) throws Exception {
        Sql.execute(db, """
                INSERT INTO album (album_key, workspace, provider, account_id, conversation_id, album_id, decided_version, decided_at,
                                   needs_person, decide_after)
                VALUES ('ws:p:acc:c:alb1', 'ws', 'p', 'acc', 'c', 'alb1', 1, now(), true, NULL)""");
        browser.open(first.uri("/status").toString());
        assertThat(served(browser.html())).contains("1 album(s) need a person");

        browser.clickAndWait("resolve-ws:p:acc:c:alb1");

        assertThat(Sql.rows(db, "SELECT needs_person, resolved_by FROM album")).containsExactly(List.of(false, OPERATOR));
        assertThat(Sql.rows(db, "SELECT acted_by, action, target FROM operator_action"))
                .containsExactly(List.of(OPERATOR, "resolve-album", "album ws:p:acc:c:alb1"));
        assertThat(served(browser.html())).doesNotContain("need a person");
    }

    @Test
    void aBotIsPausedAndResumedByItsButtonsEachRecordedOnceWithTheName(DataSource db) throws Exception {
        browser.clickAndWait("pause-bot-main");

        assertThat(Sql.rows(db, "SELECT name, paused_by FROM operator_pause")).containsExactly(List.of("main", OPERATOR));
        List<String> paused = StatusPageTest.cells(served(browser.html()), "bot-pause-main");
        assertThat(paused.subList(0, 2)).containsExactly("main", "paused");
        assertThat(paused.get(2)).endsWith(" s ago)");
        assertThat(paused.get(3)).isEqualTo(OPERATOR);

        browser.clickAndWait("resume-bot-main");

        assertThat(Sql.count(db, "SELECT count(*) FROM operator_pause")).isZero();
        assertThat(StatusPageTest.cells(served(browser.html()), "bot-pause-main").get(1)).isEqualTo("not paused");
        assertThat(Sql.rows(db, "SELECT acted_by, action, target FROM operator_action ORDER BY id")).containsExactly(
                List.of(OPERATOR, "pause-bot", "telegram bot main"), List.of(OPERATOR, "resume-bot", "telegram bot main"));
    }

    @Test
    void aConversationIsErasedFromThePageAfterItsCountAndTheErasureIsRecordedWithTheName(DataSource db) throws Exception {
        String id = "evt_console_" + events.incrementAndGet();
        SignedDeliverySender sender = new SignedDeliverySender(first.uri("/webhooks/unifyport"), Secret.of(WEBHOOK_SECRET));
        byte[] body = SignedDeliverySender.envelope(id, "message.received", "whatsapp", "acc", Instant.now(), """
                {"conversation":{"id":"conv-page"},"sender":{"id":"u-page"},"message":{"id":"m-page","type":"text","text":"PAGEMARKER hi"}}""");
        assertThat(sender.post(sender.sign(id, body, TimestampForm.RFC3339)).status()).isEqualTo(200);
        Await.workScheduled(db);
        String key = "unifyport:ws-console:acc:conv-page";

        browser.open(first.uri("/status").toString());
        browser.evaluate("document.getElementById('erase-subject').value = 'conversation'");
        browser.type("erase-key", key);
        browser.clickAndWait("erase-button");

        assertThat(served(browser.html())).as("the count comes first").contains("conversation " + key + " --dry-run: would erase")
                .contains("1 webhook events, 1 messages");
        assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event WHERE body IS NOT NULL AND event_id = '" + id + "'"))
                .as("nothing changed before the confirmation").isEqualTo(1);

        browser.clickAndWait("erase-confirm");

        assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event WHERE body IS NULL AND payload IS NULL AND event_id = '" + id + "'"))
                .isEqualTo(1);
        assertThat(Sql.count(db, "SELECT count(*) FROM channel_message WHERE text LIKE '%PAGEMARKER%'")).isZero();
        assertThat(Sql.rows(db, "SELECT erased_by, subject, key FROM erasure")).containsExactly(List.of(OPERATOR, "conversation", key));
        assertThat(Sql.rows(db, "SELECT acted_by, action, target FROM operator_action"))
                .containsExactly(List.of(OPERATOR, "erase", "conversation " + key));
        assertThat(served(browser.html())).contains("conversation " + key + " erased by " + OPERATOR + ":");
    }

    @Test
    void postsWithoutTheCsrfTokenWithAWrongOneOrFromAnotherSiteAreRefusedAndChangeNothing(DataSource db) throws Exception {
        long item = parkedItem(db, "no");
        String cookie = sessionCookie(first);
        String page = served(get(first.uri("/status"), Map.of("Cookie", cookie)).body());
        Matcher csrf = Pattern.compile("name=\"csrf\" value=\"([0-9a-f]+)\"").matcher(page);
        assertThat(csrf.find()).isTrue();
        String rightToken = csrf.group(1);
        String operator = StatusSession.OPERATOR_COOKIE + "=x";

        assertThat(post(first, "retry", Map.of("Cookie", cookie + "; " + operator), "id=" + item).statusCode()).as("no CSRF token")
                .isEqualTo(403);
        assertThat(post(first, "retry", Map.of("Cookie", cookie + "; " + operator), "id=" + item + "&csrf=" + "0".repeat(64))
                .statusCode()).as("a wrong CSRF token").isEqualTo(403);
        assertThat(post(first, "retry", Map.of("Cookie", sessionCookie(second) + "; " + operator), "id=" + item + "&csrf=" + rightToken)
                .statusCode()).as("another session's CSRF token").isEqualTo(403);
        assertThat(post(first, "retry", Map.of("Cookie", cookie + "; " + operator, "Origin", "http://evil.example"),
                "id=" + item + "&csrf=" + rightToken).statusCode()).as("another origin").isEqualTo(403);
        assertThat(post(first, "retry", Map.of("Cookie", cookie + "; " + operator, "Sec-Fetch-Site", "cross-site"),
                "id=" + item + "&csrf=" + rightToken).statusCode()).as("a cross-site request").isEqualTo(403);
        assertThat(post(first, "retry", Map.of(), "id=" + item + "&csrf=" + rightToken).statusCode()).as("no session").isEqualTo(401);
        assertThat(post(first, "retry", Map.of("Authorization", "Bearer " + STATUS_TOKEN), "id=" + item + "&csrf=" + rightToken)
                .statusCode()).as("a bearer token reads and never acts").isEqualTo(403);
        assertThat(get(first.uri("/status/retry?id=" + item), Map.of("Cookie", cookie)).statusCode()).as("GET").isEqualTo(405);

        // A real cross-site attack: a page of another site posting the form, even with the right CSRF token.
        HttpServer evil = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        String form = "<form id=f method=post action=\"" + first.uri("/status/retry") + "\"><input name=id value=" + item
                + "><input name=csrf value=" + rightToken + "></form><script>document.getElementById('f').submit()</script>";
        evil.createContext("/", exchange -> {
            byte[] body = form.getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "text/html");
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        evil.start();
        try {
            // localhost and 127.0.0.1 are different sites to a browser.
            browser.open("http://localhost:" + evil.getAddress().getPort() + "/");
            Await.until("the forged form answered", Duration.ofSeconds(30), () -> browser.url().startsWith(first.uri("/status/retry").toString()));
            assertThat(browser.text()).contains("Nothing changed");
        } finally {
            evil.stop(0);
        }

        assertThat(Sql.string(db, "SELECT state FROM work_item WHERE id = " + item)).isEqualTo("parked");
        assertThat(Sql.count(db, "SELECT count(*) FROM operator_action")).isZero();
    }

    @Test
    void noSecretInAnyPageOrResponse() throws Exception {
        served(get(first.uri("/status"), Map.of("Authorization", "Bearer " + STATUS_TOKEN)).body());
        HttpResponse<String> signIn = get(first.uri("/status?token=" + STATUS_TOKEN), Map.of());
        assertThat(signIn.statusCode()).isEqualTo(303);
        assertThat(signIn.headers().firstValue("Location")).hasValue("status");
        assertThat(signIn.headers().firstValue("Set-Cookie")).hasValueSatisfying(c -> assertThat(c)
                .contains("HttpOnly").contains("SameSite=Strict").doesNotContain(STATUS_TOKEN));
        served(signIn.body());
        served(signIn.headers().map().toString());
        HttpResponse<String> refused = get(first.uri("/status?token=wrong"), Map.of());
        assertThat(refused.statusCode()).isEqualTo(401);
        assertThat(refused.headers().firstValue("Cache-Control")).hasValue("no-store");
        served(refused.body());
        served(get(first.uri("/observe/health"), Map.of()).body());
        served(browser.html());
        assertThat(served).hasSizeGreaterThan(4);
        for (String body : served) {
            SECRETS.values().forEach(secret -> assertThat(body).doesNotContain(secret));
            assertThat(body).doesNotContain(MEDIA_SIGNATURE);
        }
    }

    /** One value per bucket, from the graph's data attributes. */
    record Graph(Instant from, List<Long> values) {
        long sum() {
            return values.stream().mapToLong(Long::longValue).sum();
        }
    }

    private static Graph graph(String html, String id) {
        Matcher svg = Pattern.compile("<svg[^>]* id=\"" + Pattern.quote(id) + "\"[^>]*>").matcher(html);
        assertThat(svg.find()).as("graph " + id + " on the page").isTrue();
        Matcher from = Pattern.compile("data-from=\"([^\"]+)\"").matcher(svg.group());
        Matcher values = Pattern.compile("data-values=\"([^\"]+)\"").matcher(svg.group());
        assertThat(from.find() && values.find()).isTrue();
        List<Long> parsed = new ArrayList<>();
        for (String v : values.group(1).split(",")) {
            parsed.add(Long.parseLong(v));
        }
        return new Graph(Instant.parse(from.group(1)), parsed);
    }

    private static String served(String body) {
        served.add(body);
        return body;
    }

    private static long history(DataSource db, String series, String subject) {
        return Sql.count(db, "SELECT coalesce(sum(value), 0)::bigint FROM status_rollup WHERE resolution = 'minute' AND series = '"
                + series + "' AND subject = '" + subject + "'");
    }

    private static Instant dbNow(DataSource db) {
        return Instant.parse(Sql.string(db, "SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"));
    }

    private static void deliver(WebhookServer server) {
        String id = "evt_console_" + events.incrementAndGet();
        SignedDeliverySender sender = new SignedDeliverySender(server.uri("/webhooks/unifyport"), Secret.of(WEBHOOK_SECRET));
        byte[] body = SignedDeliverySender.envelope(id, "message.received", "whatsapp", "acc", Instant.now(), "{}");
        SignedDeliverySender.Response answer = sender.post(sender.sign(id, body, TimestampForm.RFC3339));
        assertThat(answer.status()).isEqualTo(200);
        served(answer.body());
    }

    /** A real delivery's work item, run to done once and then parked as if its handler had failed for good. */
    private static long parkedItem(DataSource db, String lastError) {
        int before = events.get();
        deliver(first);
        String source = "evt_console_" + (before + 1);
        Await.until("the delivery's work done", Duration.ofSeconds(60), () -> Sql.count(db,
                "SELECT count(*) FROM work_item w JOIN webhook_event e ON e.id = w.source_id AND w.kind = 'unifyport-event'"
                        + " WHERE e.event_id = '" + source + "' AND w.state = 'done'") == 1);
        long id = Sql.count(db, "SELECT w.id FROM work_item w JOIN webhook_event e ON e.id = w.source_id AND w.kind = 'unifyport-event'"
                + " WHERE e.event_id = '" + source + "'");
        Sql.execute(db, "UPDATE work_item SET state = 'parked', attempts = 8, done_at = NULL, last_error = '"
                + lastError.replace("'", "''") + "' WHERE id = " + id);
        return id;
    }

    private String sessionCookie(WebhookServer server) throws Exception {
        HttpResponse<String> signIn = get(server.uri("/status?token=" + STATUS_TOKEN), Map.of());
        String setCookie = signIn.headers().firstValue("Set-Cookie").orElseThrow();
        return setCookie.substring(0, setCookie.indexOf(';'));
    }

    private HttpResponse<String> get(URI uri, Map<String, String> headers) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(uri).GET();
        headers.forEach(request::header);
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> post(WebhookServer server, String action, Map<String, String> headers, String form) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(server.uri("/status/" + action))
                .header("Content-Type", "application/x-www-form-urlencoded")
                .POST(HttpRequest.BodyPublishers.ofString(form));
        headers.forEach(request::header);
        HttpResponse<String> answer = http.send(request.build(), HttpResponse.BodyHandlers.ofString());
        served(answer.body());
        return answer;
    }
}
