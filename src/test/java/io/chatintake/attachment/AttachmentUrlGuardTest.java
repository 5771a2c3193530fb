package io.chatintake.attachment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.sun.net.httpserver.HttpServer;
import io.chatintake.config.Secret;
import io.chatintake.config.Settings;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.testkit.WebhookServer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.slf4j.LoggerFactory;

/**
 * Attachment URLs pointing into the runner's own network are never fetched: loopback, cloud
 * metadata, private addresses, a redirect to loopback, a {@code file:} URL. Each attachment is
 * failed at once with one log line, its work done (not retried, not parked), and the loopback
 * server sees no request for what it must not serve. Plain http is allowed here so that the
 * address check is what refuses; only {@code localhost} is allowed by name, to serve the redirect.
 */
@ExtendWith(TestDatabase.class)
class AttachmentUrlGuardTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final String SECRET = "secret_guard";

    private static HttpServer local;
    private static final ConcurrentLinkedQueue<String> requested = new ConcurrentLinkedQueue<>();
    private static WebhookServer server;
    private static SignedDeliverySender sender;

    private final DataSource db = TestDatabase.dataSource();

    @BeforeAll
    static void start() throws Exception {
        local = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 10);
        local.createContext("/", exchange -> {
            requested.add(exchange.getRequestURI().getPath());
            if (exchange.getRequestURI().getPath().equals("/redirect")) {
                exchange.getResponseHeaders().add("Location", "http://127.0.0.1:" + local.getAddress().getPort() + "/secret-file");
                exchange.sendResponseHeaders(302, -1);
            } else {
                exchange.sendResponseHeaders(200, 2);
                exchange.getResponseBody().write("ok".getBytes());
            }
            exchange.close();
        });
        local.start();
        server = WebhookServer.builder(TestDatabase.dataSource())
                .routeFiles("file:routes/unifyport-*.yaml,file:routes/attachments.yaml")
                .settings(Map.of("unifyport.signing-secrets", SECRET, "unifyport.workspace", "ws-guard",
                        "chat-intake.data-dir", Files.createTempDirectory("chat-intake-guard").toString(),
                        "attachments.allow-http", "true", "attachments.allowed-hosts", "localhost",
                        "attachments.download-timeout-seconds", "2"))
                .settings(Map.of("work.concurrency", "2", "work.max-attempts", "4",
                        "work.backoff-base-millis", "100", "work.backoff-cap-millis", "400", "work.poll-interval-millis", "50"))
                .start();
        sender = new SignedDeliverySender(server.uri("/webhooks/unifyport"), Secret.of(SECRET));
    }

    @AfterAll
    static void stop() {
        server.close();
        local.stop(0);
    }

    @Test
    void urlsIntoTheRunnersOwnNetworkAreFailedAtOnceWithoutARequest() {
        int port = local.getAddress().getPort();
        List<String> urls = List.of("http://127.0.0.1:" + port + "/loopback", "http://169.254.169.254/latest/meta-data/",
                "http://10.0.0.1/internal", "http://localhost:" + port + "/redirect", "file:///etc/passwd");
        ListAppender<ILoggingEvent> logs = new ListAppender<>();
        logs.start();
        Logger fetcherLog = (Logger) LoggerFactory.getLogger(AttachmentFetcher.class);
        fetcherLog.addAppender(logs);
        try {
            StringBuilder elements = new StringBuilder();
            urls.forEach(url -> elements.append(elements.isEmpty() ? "" : ",").append("{\"url\":\"").append(url).append("\"}"));
            byte[] body = SignedDeliverySender.envelope("evt_guard", "message.received", "whatsapp", "acc_1", Instant.now(),
                    "{\"conversation\":{\"id\":\"c\",\"type\":\"user\"},\"message\":{\"id\":\"m_guard\",\"type\":\"file\","
                            + "\"attachments\":[" + elements + "]}}");
            assertThat(sender.post(sender.sign("evt_guard", body, TimestampForm.RFC3339)).status()).isEqualTo(200);

            Await.until("every attachment's work done", WAIT, () -> Sql.count(db,
                    "SELECT count(*) FROM work_item WHERE kind = 'attachment' AND state = 'done'") == urls.size());
        } finally {
            fetcherLog.detachAppender(logs);
        }
        List<List<Object>> rows = Sql.rows(db, "SELECT position, status, attempts, last_error FROM message_attachment ORDER BY position");
        assertThat(rows).hasSize(urls.size());
        for (List<Object> row : rows) {
            assertThat(row.get(1)).as("attachment %s", row.get(0)).isEqualTo("failed");
            assertThat(row.get(2)).as("attachment %s tried once", row.get(0)).isEqualTo(1L);
            assertThat((String) row.get(3)).as("attachment %s", row.get(0)).startsWith("refused: ");
        }
        assertThat((String) rows.get(0).get(3)).contains("127.0.0.1");
        assertThat((String) rows.get(1).get(3)).contains("169.254.169.254");
        assertThat((String) rows.get(2).get(3)).contains("10.0.0.1");
        assertThat((String) rows.get(3).get(3)).contains("127.0.0.1").endsWith("(after a redirect)");
        assertThat((String) rows.get(4).get(3)).contains("scheme 'file'");
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'attachment' AND (attempts <> 1 OR state <> 'done')"))
                .as("no retry, no parking").isZero();
        assertThat(requested).as("the loopback server saw only the redirect's first hop").containsExactly("/redirect");
        for (List<Object> row : rows) {
            long id = Sql.count(db, "SELECT id FROM message_attachment WHERE position = " + row.get(0));
            assertThat(logs.list).as("one line for attachment %s", row.get(0))
                    .filteredOn(e -> e.getFormattedMessage().startsWith("attachment " + id + ":")).singleElement()
                    .satisfies(e -> assertThat(e.getThrowableProxy()).as("no stack trace").isNull());
        }
    }

    @Test
    void onlyHttpsUnlessAllowedAndAddressesCheckedAfterResolution() throws Exception {
        FetchGuard strict = FetchGuard.from(Settings.of(Map.of()));
        assertThat(strict.check("https://media.example/a.jpg?sig=x").getHost()).isEqualTo("media.example");
        assertThatThrownBy(() -> strict.check("http://media.example/a.jpg")).hasMessageContaining("attachments.allow-http")
                .isInstanceOf(FetchGuard.RefusedException.class);
        assertThatThrownBy(() -> strict.check("ftp://media.example/a")).isInstanceOf(FetchGuard.RefusedException.class);
        assertThatThrownBy(() -> strict.check("https:///no-host")).hasMessage("refused: the url names no host");
        assertThatThrownBy(() -> strict.check("https://media example/?sig=SECRETSIG")).hasMessage("refused: the url is not a valid URI");
        for (String address : List.of("127.0.0.1", "::1", "0.0.0.0", "::", "169.254.169.254", "fd00:ec2::254", "10.1.2.3",
                "172.20.0.1", "192.168.1.1", "fc00::1", "fe80::1", "::ffff:127.0.0.1", "64:ff9b::a00:1", "100.64.0.1")) {
            assertThatThrownBy(() -> strict.resolve(address)).as(address).isInstanceOf(FetchGuard.RefusedException.class);
        }
        for (String address : List.of("93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c", "64:ff9b::5db8:d70e")) {
            assertThat(strict.resolve(address)).as(address).hasSize(1);
        }
        FetchGuard allowing = FetchGuard.from(Settings.of(Map.of("attachments.allowed-hosts", "10.20.0.0/16, media.internal ,fd00::5")));
        assertThat(allowing.resolve("10.20.3.4")).hasSize(1);
        assertThat(allowing.resolve("fd00::5")).hasSize(1);
        assertThatThrownBy(() -> allowing.resolve("10.21.0.1")).isInstanceOf(FetchGuard.RefusedException.class);
    }
}
