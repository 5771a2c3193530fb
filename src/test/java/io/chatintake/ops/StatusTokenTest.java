package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Settings;
import io.chatintake.testkit.LogCapture;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.testkit.WebhookServer;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The status token's rules over the real platform-http server: a short token keeps the page off,
 * wrong tokens are limited per client address (429 with Retry-After), the bearer token never acts,
 * the session cookie is Secure behind a trusted TLS proxy only, and a session signs out.
 */
@ExtendWith(TestDatabase.class)
class StatusTokenTest {
    private static final String TOKEN = "status-token-SECRET-0123456789abcdef-long";
    private static final String SHORT_TOKEN = "SECRET-only-31-characters-long!";
    private static final int LIMIT = 10;

    private static WebhookServer server;
    private final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    static void start() {
        DataSource db = TestDatabase.dataSource();
        Map<String, String> settings = new HashMap<>(Map.of(StatusPage.TOKEN, TOKEN,
                WrongTokenLimit.LIMIT, Integer.toString(LIMIT), WrongTokenLimit.WINDOW_SECONDS, "600",
                TrustedProxies.KEY, "127.0.0.0/8"));
        server = WebhookServer.start(db, settings, "file:routes/hello.yaml",
                Map.of("statusPageRoute", StatusPage.route(Settings.of(settings), db)));
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    @Test
    void aTokenShorterThan32CharactersKeepsThePageOffAndSaysSoOnceWithoutTheToken(DataSource db) throws Exception {
        assertThat(SHORT_TOKEN).hasSize(StatusPage.MIN_TOKEN_LENGTH - 1);
        Map<String, String> settings = Map.of(StatusPage.TOKEN, SHORT_TOKEN);
        try (LogCapture log = new LogCapture()) {
            try (WebhookServer shortToken = WebhookServer.start(db, settings, "file:routes/hello.yaml",
                    Map.of("statusPageRoute", StatusPage.route(Settings.of(settings), db)))) {
                for (String uri : new String[] {"/status", "/status?token=" + SHORT_TOKEN}) {
                    HttpResponse<String> off = send(HttpRequest.newBuilder(shortToken.uri(uri)).GET());
                    assertThat(off.statusCode()).isEqualTo(404);
                    assertThat(off.body()).contains("shorter than 32 characters").doesNotContain(SHORT_TOKEN);
                }
                assertThat(send(HttpRequest.newBuilder(shortToken.uri("/status")).header("Authorization", "Bearer " + SHORT_TOKEN).GET())
                        .statusCode()).isEqualTo(404);
            }
            assertThat(log.lines().stream().filter(l -> l.contains("status page: OFF") && l.contains("shorter than 32")))
                    .as("one line at start saying why").hasSize(1);
            assertThat(String.join("\n", log.lines())).doesNotContain(SHORT_TOKEN);
        }
    }

    @Test
    void aThousandWrongTokensFromOneAddressAreAnswered429AfterTheLimit() throws Exception {
        String attacker = "192.0.2.10";
        int refused = 0;
        int limited = 0;
        String retryAfter = null;
        try (LogCapture log = new LogCapture()) {
            for (int i = 0; i < 1000; i++) {
                HttpRequest.Builder request = HttpRequest.newBuilder(server.uri(i % 2 == 0 ? "/status?token=wrong-SECRET-" + i : "/status"))
                        .header("X-Forwarded-For", "203.0.113.99, " + attacker).GET();
                if (i % 2 == 1) {
                    request.header("Authorization", "Bearer wrong-SECRET-" + i);
                }
                HttpResponse<String> answer = send(request);
                if (answer.statusCode() == 401) {
                    assertThat(limited).as("no 401 once limited").isZero();
                    refused++;
                } else {
                    assertThat(answer.statusCode()).isEqualTo(429);
                    retryAfter = answer.headers().firstValue("Retry-After").orElseThrow();
                    limited++;
                }
            }
            assertThat(log.lines().stream().filter(l -> l.contains("status page: 4")).count()).as("refusals are not one line each")
                    .isLessThan(5);
            assertThat(String.join("\n", log.lines())).doesNotContain("wrong-SECRET");
        }
        assertThat(refused).isEqualTo(LIMIT);
        assertThat(limited).isEqualTo(1000 - LIMIT);
        assertThat(Long.parseLong(retryAfter)).isBetween(1L, 601L);
        assertThat(send(HttpRequest.newBuilder(server.uri("/status?token=" + TOKEN)).header("X-Forwarded-For", attacker).GET())
                .statusCode()).as("the right token too, until the window ends").isEqualTo(429);
        assertThat(send(HttpRequest.newBuilder(server.uri("/status?token=" + TOKEN)).header("X-Forwarded-For", "192.0.2.11").GET())
                .statusCode()).as("another address").isEqualTo(303);
    }

    @Test
    void aBearerPostIsRefusedAndChangesNothing(DataSource db) throws Exception {
        Sql.execute(db, "INSERT INTO work_item (kind, source_key, source_id, state, attempts, last_error)"
                + " VALUES ('telegram-update', 'tp:1', 1, 'parked', 8, 'no')");
        long id = Sql.count(db, "SELECT id FROM work_item");
        String client = "192.0.2.20";
        for (String action : new String[] {"retry", "operator", "logout"}) {
            HttpResponse<String> answer = send(HttpRequest.newBuilder(server.uri("/status/" + action + "?token=" + TOKEN))
                    .header("Authorization", "Bearer " + TOKEN).header("X-Forwarded-For", client)
                    .header("Content-Type", "application/x-www-form-urlencoded").header("Cookie", StatusSession.OPERATOR_COOKIE + "=x")
                    .POST(HttpRequest.BodyPublishers.ofString("id=" + id + "&name=x")));
            assertThat(answer.statusCode()).as(action).isEqualTo(403);
            assertThat(answer.body()).contains("only reads").contains("Nothing changed");
            assertThat(answer.headers().firstValue("Set-Cookie")).isEmpty();
        }
        assertThat(Sql.string(db, "SELECT state FROM work_item WHERE id = " + id)).isEqualTo("parked");
        assertThat(Sql.count(db, "SELECT count(*) FROM operator_action")).isZero();
    }

    @Test
    void theSessionCookieIsSecureBehindATrustedTlsProxyOnlyAndASessionSignsOut() throws Exception {
        String plain = signIn(Map.of("X-Forwarded-For", "192.0.2.30"));
        assertThat(plain).doesNotContain("Secure");
        String tls = signIn(Map.of("X-Forwarded-For", "192.0.2.31", "X-Forwarded-Proto", "https"));
        assertThat(tls).endsWith("; Secure");

        String cookie = plain.substring(0, plain.indexOf(';'));
        HttpResponse<String> page = send(HttpRequest.newBuilder(server.uri("/status")).header("Cookie", cookie).GET());
        assertThat(page.statusCode()).isEqualTo(200);
        Matcher csrf = Pattern.compile("<form id=\"logout\"[^>]*><input type=\"hidden\" name=\"csrf\" value=\"([0-9a-f]+)\"")
                .matcher(page.body());
        assertThat(csrf.find()).as("a sign-out button on the page").isTrue();
        HttpResponse<String> out = send(HttpRequest.newBuilder(server.uri("/status/logout")).header("Cookie", cookie)
                .header("Content-Type", "application/x-www-form-urlencoded")
                .POST(HttpRequest.BodyPublishers.ofString("csrf=" + csrf.group(1))));
        assertThat(out.statusCode()).isEqualTo(303);
        String ended = out.headers().firstValue("Set-Cookie").orElseThrow();
        assertThat(ended).startsWith(StatusSession.COOKIE + "=;").contains("Max-Age=0");
    }

    @Test
    void aBrowserWithoutASessionGetsASignInFormThatOpensOne() throws Exception {
        HttpResponse<String> refused = send(HttpRequest.newBuilder(server.uri("/status")).header("Accept", "text/html")
                .header("X-Forwarded-For", "192.0.2.40").GET());
        assertThat(refused.statusCode()).isEqualTo(401);
        assertThat(refused.body()).contains("<form id=\"login\" method=\"post\" action=\"status/login\">")
                .contains("type=\"password\"");

        HttpResponse<String> wrong = login("wrong-SECRET-token", "192.0.2.40");
        assertThat(wrong.statusCode()).isEqualTo(401);
        assertThat(wrong.headers().firstValue("Set-Cookie")).isEmpty();
        HttpResponse<String> right = login(TOKEN, "192.0.2.40");
        assertThat(right.statusCode()).isEqualTo(303);
        assertThat(right.headers().firstValue("Location")).hasValue("../status");
        String cookie = right.headers().firstValue("Set-Cookie").orElseThrow();
        assertThat(cookie).startsWith(StatusSession.COOKIE + "=").contains("HttpOnly");
        HttpResponse<String> page = send(HttpRequest.newBuilder(server.uri("/status"))
                .header("Cookie", cookie.substring(0, cookie.indexOf(';'))).GET());
        assertThat(page.statusCode()).isEqualTo(200);
        assertThat(page.body()).contains("id=\"logout\"");
        assertThat(send(HttpRequest.newBuilder(server.uri("/status/login")).header("Origin", "http://evil.example")
                .header("Content-Type", "application/x-www-form-urlencoded")
                .POST(HttpRequest.BodyPublishers.ofString("token=" + TOKEN))).statusCode()).as("from another origin").isEqualTo(403);
    }

    private HttpResponse<String> login(String token, String client) throws Exception {
        return send(HttpRequest.newBuilder(server.uri("/status/login")).header("X-Forwarded-For", client)
                .header("Content-Type", "application/x-www-form-urlencoded")
                .POST(HttpRequest.BodyPublishers.ofString("token=" + java.net.URLEncoder.encode(token, java.nio.charset.StandardCharsets.UTF_8))));
    }

    /** A proxy this server does not trust cannot claim TLS for its client. */
    @Test
    void anUntrustedPeerCannotClaimTls() {
        TrustedProxies none = TrustedProxies.from(Settings.of(Map.of()));
        TrustedProxies cluster = TrustedProxies.from(Settings.of(Map.of(TrustedProxies.KEY, "10.0.0.0/8, ::1")));
        assertThat(none.trusts("127.0.0.1")).isFalse();
        assertThat(cluster.trusts("10.20.30.40")).isTrue();
        assertThat(cluster.trusts("11.0.0.1")).isFalse();
        assertThat(cluster.trusts("0:0:0:0:0:0:0:1")).isTrue();
        assertThat(cluster.trusts("localhost")).as("never a name").isFalse();
    }

    private String signIn(Map<String, String> headers) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(server.uri("/status?token=" + TOKEN)).GET();
        headers.forEach(request::header);
        HttpResponse<String> answer = send(request);
        assertThat(answer.statusCode()).isEqualTo(303);
        return answer.headers().firstValue("Set-Cookie").orElseThrow();
    }

    private HttpResponse<String> send(HttpRequest.Builder request) throws Exception {
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }
}
