package io.chatintake.attachment;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.chatintake.config.Secret;
import io.chatintake.support.MeterRegistryLookup;
import io.chatintake.sim.BotApiSimulator;
import io.chatintake.sim.MediaHost;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.Response;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.Content;
import io.chatintake.testkit.LogLine;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.testkit.WebhookServer;
import io.chatintake.work.WorkDispatcher;
import io.micrometer.core.instrument.Counter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.slf4j.LoggerFactory;

/**
 * Attachments of signed UnifyPort events and of Telegram children, downloaded by the fetcher
 * through the real work dispatcher: the shipped webhook and attachment routes on loopback HTTP,
 * media on a {@link MediaHost}, Telegram files on the {@link BotApiSimulator}, a real PostgreSQL.
 * Every test also checks that no signed URL and no bot token reached a log line.
 */
@ExtendWith(TestDatabase.class)
class AttachmentFetcherTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final int MAX_BYTES = 64 * 1024;
    private static final int MAX_ATTEMPTS = 4;
    private static final long BOT_ID = 4343;
    private static final String SECRET = "secret_1";

    private static MediaHost media;
    private static BotApiSimulator telegram;
    private static String token;
    private static Path dataDir;
    private static WebhookServer server;
    private static SignedDeliverySender sender;

    private final DataSource db = TestDatabase.dataSource();
    private final ListAppender<ILoggingEvent> logs = new ListAppender<>();

    @BeforeAll
    static void start() throws Exception {
        media = MediaHost.start();
        telegram = BotApiSimulator.start();
        token = telegram.addBot(BOT_ID, "FAKE-attachment-test-token", "files_bot");
        dataDir = Files.createTempDirectory("chat-intake-attachments");
        server = WebhookServer.builder(TestDatabase.dataSource())
                .routeFiles("file:routes/unifyport-*.yaml,file:routes/attachments.yaml")
                .settings(Map.of("unifyport.signing-secrets", SECRET, "unifyport.workspace", "ws-att",
                        "chat-intake.data-dir", dataDir.toString(),
                        "attachments.max-bytes", Integer.toString(MAX_BYTES),
                        "attachments.download-timeout-seconds", "2",
                        "telegram.api-url", telegram.url(),
                        "telegram.bots.files.token", token))
                .settings(Map.of("work.concurrency", "2", "work.max-attempts", Integer.toString(MAX_ATTEMPTS),
                        "work.backoff-base-millis", "100", "work.backoff-cap-millis", "400",
                        "work.claim-seconds", "30", "work.poll-interval-millis", "50"))
                .settings(MediaHost.ALLOWED)
                .start();
        sender = new SignedDeliverySender(server.uri("/webhooks/unifyport"), Secret.of(SECRET));
    }

    @AfterAll
    static void stop() {
        server.close();
        telegram.close();
        media.close();
    }

    @BeforeEach
    void captureLogs() {
        logs.start();
        ((Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).addAppender(logs);
        ((Logger) LoggerFactory.getLogger("io.chatintake")).setLevel(Level.DEBUG);
    }

    @AfterEach
    void noSecretWasLogged() {
        ((Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).detachAppender(logs);
        ((Logger) LoggerFactory.getLogger("io.chatintake")).setLevel(null);
        List<String> secrets = new ArrayList<>(media.signatures());
        secrets.add(token);
        secrets.add("FAKE-attachment-test-token");
        for (ILoggingEvent event : logs.list) {
            String line = LogLine.render(event);
            secrets.forEach(secret -> assertThat(line).as("a log line").doesNotContain(secret));
        }
        assertThat(logs.list).as("logs were captured").isNotEmpty();
    }

    @Test
    void aUrlIsStoredByContentAndABigFileWithoutUrlIsTooLarge() throws Exception {
        byte[] content = Content.random(10_000);
        String url = media.publish(content, "image/jpeg", Duration.ofMinutes(5));

        assertThat(receive("evt_two", "m_two", "[{\"url\":\"" + url + "\",\"title\":\"a.jpg\",\"duration_ms\":null},"
                + "{\"title\":\"film.mov\",\"metadata\":{\"is_big_file\":true}}]", "").status()).isEqualTo(200);

        awaitStatus(0, "stored");
        assertThat(status(1)).isEqualTo("too_large");
        assertThat(column(0, "sha256")).isEqualTo(Content.sha256(content));
        assertThat(column(0, "size_bytes")).isEqualTo("10000");
        assertThat(column(0, "content_type")).isEqualTo("image/jpeg");
        assertThat(column(0, "title")).isEqualTo("a.jpg");
        Path file = dataDir.resolve("media").resolve(column(0, "media_path"));
        assertThat(file).isEqualTo(dataDir.resolve("media").resolve(Content.sha256(content).substring(0, 2)).resolve(Content.sha256(content)));
        assertThat(Files.readAllBytes(file)).isEqualTo(content);
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'attachment'")).as("no download for no URL").isEqualTo(1);
        assertThat(Sql.string(db, "SELECT url FROM message_attachment WHERE position = 1")).isNull();
    }

    @Test
    void aUrlThatExpiredBeforeTheDownloadIsExpiredAndTheChildAndAlbumStayIntact() {
        String url = media.publish(Content.random(100), "image/png", Duration.ofSeconds(-1));

        receive("evt_exp", "m_exp", "[{\"url\":\"" + url + "\"}]", ",\"album\":{\"id\":\"alb_7\",\"index\":1,\"total\":3}");

        awaitStatus(0, "expired");
        assertThat(column(0, "last_error")).isEqualTo("answered 403");
        assertThat(media.requests(url)).as("no retry of an expired URL").isEqualTo(1);
        awaitWork("done 1");
        assertThat(Sql.string(db, "SELECT concat_ws('|', message_id, caption, album_id, album_index, album_total, deleted_at,"
                + " attachments->0->>'url') FROM channel_message"))
                .isEqualTo(String.join("|", "m_exp", "look", "alb_7", "1", "3", url));
        assertThat(Sql.count(db, "SELECT count(*) FROM channel_message")).isEqualTo(1);
        Await.until("the event's own work is done", WAIT,
                () -> "done".equals(Sql.string(db, "SELECT state FROM work_item WHERE kind = 'unifyport-event'")));
    }

    @Test
    void twoServerErrorsAreRetriedWithBackoffAndTheThirdAttemptStores() throws Exception {
        byte[] content = Content.random(2_000);
        String url = media.publish(content, "video/mp4", Duration.ofMinutes(5));
        media.failNext(url, 2);

        receive("evt_500", "m_500", "[{\"url\":\"" + url + "\"}]", "");

        awaitStatus(0, "stored");
        assertThat(media.requests(url)).isEqualTo(3);
        assertThat(column(0, "attempts")).isEqualTo("3");
        assertThat(column(0, "sha256")).isEqualTo(Content.sha256(content));
        awaitWork("done 3");
    }

    @Test
    void aDownloadThatStallsIsCutAtTheTimeoutAndRetried() throws Exception {
        byte[] content = Content.random(4_000);
        String url = media.publish(content, "image/png", Duration.ofMinutes(5));
        media.stallNext(url, 1);

        receive("evt_stall", "m_stall", "[{\"url\":\"" + url + "\"}]", "");

        awaitStatus(0, "stored");
        assertThat(column(0, "sha256")).isEqualTo(Content.sha256(content));
        awaitWork("done 2");
        assertThat(logs.list).extracting(ILoggingEvent::getFormattedMessage).anyMatch(m -> m.contains("not complete within 2 s"));
    }

    @Test
    void aUrlFailingEveryAttemptIsFailedAndItsWorkParkedForRetry() {
        String url = media.publish(Content.random(100), "image/png", Duration.ofMinutes(5));
        media.failNext(url, Integer.MAX_VALUE);

        receive("evt_down", "m_down", "[{\"url\":\"" + url + "\"}]", "");

        awaitStatus(0, "failed");
        assertThat(column(0, "attempts")).isEqualTo(Integer.toString(MAX_ATTEMPTS));
        assertThat(column(0, "last_error")).isEqualTo("answered 500");
        awaitWork("parked " + MAX_ATTEMPTS);
        assertThat(media.requests(url)).isEqualTo(MAX_ATTEMPTS);
    }

    @Test
    void aFileOverTheCapIsTooLargeAndLeavesNothingOnDisk() throws Exception {
        byte[] content = Content.random(MAX_BYTES + 1);
        String url = media.publish(content, "application/zip", Duration.ofMinutes(5));
        String declaredHuge = media.publish(Content.random(10), "application/zip", Duration.ofMinutes(5));

        receive("evt_big", "m_big", "[{\"url\":\"" + url + "\"},{\"url\":\"" + declaredHuge + "\",\"size\":1000000000}]", "");

        awaitStatus(0, "too_large");
        awaitStatus(1, "too_large");
        assertThat(media.requests(declaredHuge)).as("a declared size over the cap is not downloaded").isZero();
        assertThat(column(0, "sha256")).isNull();
        assertThat(dataDir.resolve("media").resolve(Content.sha256(content).substring(0, 2)).resolve(Content.sha256(content))).doesNotExist();
        try (Stream<Path> parts = Files.list(dataDir.resolve("media/tmp"))) {
            assertThat(parts).as("no partial download left").isEmpty();
        }
    }

    @Test
    void theSameContentInTwoAttachmentsIsStoredOnce() throws Exception {
        byte[] content = Content.random(5_000);
        String first = media.publish(content, "image/jpeg", Duration.ofMinutes(5));
        String second = media.publish(content, "image/jpeg", Duration.ofMinutes(5));

        receive("evt_same", "m_same", "[{\"url\":\"" + first + "\"},{\"url\":\"" + second + "\"}]", "");

        awaitStatus(0, "stored");
        awaitStatus(1, "stored");
        assertThat(Sql.count(db, "SELECT count(DISTINCT sha256) FROM message_attachment")).isEqualTo(1);
        assertThat(column(1, "media_path")).isEqualTo(column(0, "media_path"));
        String hash = Content.sha256(content);
        try (Stream<Path> files = Files.list(dataDir.resolve("media").resolve(hash.substring(0, 2)))) {
            assertThat(files.filter(f -> f.getFileName().toString().equals(hash))).hasSize(1);
        }
        // Counted just after the row is recorded.
        Await.until("a duplicate_content download counted", WAIT, () -> {
            Counter duplicates = MeterRegistryLookup.of(server.context()).find(AttachmentFetcher.METRIC)
                    .tags("source", "url", "outcome", "duplicate_content").counter();
            return duplicates != null && duplicates.count() >= 1;
        });
    }

    @Test
    void aTelegramFileGoesThroughGetFileAndNeitherTokenNorUrlIsLogged() throws Exception {
        byte[] photo = Content.random(3_000);
        telegram.addFile(token, "AgACphoto1", photo);
        telegramChild("{\"telegram_bot_id\":" + BOT_ID + ",\"telegram_file_id\":\"AgACphoto1\",\"file_unique_id\":\"u1\",\"kind\":\"photo\","
                + "\"file_size\":3000,\"mime_type\":\"image/jpeg\"},"
                + "{\"telegram_bot_id\":" + BOT_ID + ",\"telegram_file_id\":\"AgACgone\",\"kind\":\"document\",\"file_name\":\"x.pdf\"}");

        awaitStatus(0, "stored");
        awaitStatus(1, "failed");
        assertThat(column(0, "source")).isEqualTo("telegram-file");
        assertThat(column(0, "content_type")).isEqualTo("image/jpeg");
        assertThat(Files.readAllBytes(dataDir.resolve("media").resolve(column(0, "media_path")))).isEqualTo(photo);
        assertThat(column(1, "last_error")).contains("invalid file_id");
        assertThat(telegram.requests()).extracting(BotApiSimulator.Request::method).contains("getFile", "file");
    }

    @Test
    void anExpiredTelegramFileLinkIsRenewedThroughGetFileOncePerAttempt() throws Exception {
        byte[] photo = Content.random(1_500);
        telegram.addFile(token, "AgACstale", photo);
        telegram.expireNextFileLinks(token, "AgACstale", 3);
        int before = telegram.requests().size();

        telegramChild("{\"telegram_bot_id\":" + BOT_ID + ",\"telegram_file_id\":\"AgACstale\",\"kind\":\"photo\"}");

        awaitStatus(0, "stored");
        assertThat(Files.readAllBytes(dataDir.resolve("media").resolve(column(0, "media_path")))).isEqualTo(photo);
        // Attempt 1: link 1 expired, renewed, link 2 expired too -> retried; attempt 2: link 3 expired, link 4 works.
        assertThat(column(0, "attempts")).isEqualTo("2");
        assertThat(telegram.requests().subList(before, telegram.requests().size())).extracting(BotApiSimulator.Request::method)
                .containsExactly("getFile", "file", "getFile", "file", "getFile", "file", "getFile", "file");
        awaitWork("done 2");
        assertThat(logs.list).extracting(ILoggingEvent::getFormattedMessage)
                .filteredOn(m -> m.contains("asking getFile for a fresh one")).hasSize(2);
    }

    @Test
    void aRedeliveredEventAddsNoAttachmentAndNoWorkAndANewUrlRefreshesAnExpiredOne() throws Exception {
        String expired = media.publish(Content.random(100), "image/png", Duration.ofSeconds(-1));
        String attachments = "[{\"url\":\"" + expired + "\"}]";
        byte[] body = SignedDeliverySender.envelope("evt_again", "message.received", "whatsapp", "acc_1", Instant.now(),
                data("m_again", attachments, ""));
        assertThat(sender.post(sender.sign("evt_again", body, TimestampForm.RFC3339)).body()).contains("stored");
        awaitStatus(0, "expired");

        assertThat(sender.post(sender.sign("evt_again", body, TimestampForm.RFC3339)).body()).contains("duplicate");
        update("evt_same_url", "m_again", attachments);
        assertThat(Sql.count(db, "SELECT count(*) FROM message_attachment")).isEqualTo(1);
        awaitWork("done 1");

        byte[] content = Content.random(700);
        String fresh = media.publish(content, "image/png", Duration.ofMinutes(5));
        update("evt_new_url", "m_again", "[{\"url\":\"" + fresh + "\"}]");
        awaitStatus(0, "stored");
        assertThat(column(0, "sha256")).isEqualTo(Content.sha256(content));
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'attachment'")).isEqualTo(1);
    }

    /** A Telegram child of the bot with the given attachment elements, recorded as intake does, and the dispatcher woken. */
    private void telegramChild(String attachmentElements) throws Exception {
        Sql.execute(db, "INSERT INTO telegram_checkpoint (bot_id, bot_name) VALUES (" + BOT_ID + ", 'files')");
        long childId = Sql.count(db, "INSERT INTO channel_message (workspace, provider, account_id, conversation_id, message_id,"
                + " attachments, first_event_id) VALUES ('telegram', 'telegram', '" + BOT_ID + "', '77', '5', '["
                + attachmentElements + "]', 'tg:5') RETURNING id");
        try (Connection c = db.getConnection()) {
            c.setAutoCommit(false);
            AttachmentStore.recordFor(c, childId);
            c.commit();
        }
        WorkDispatcher.nudge(server.context());
    }

    private static Response receive(String eventId, String messageId, String attachmentsJson, String extra) {
        byte[] body = SignedDeliverySender.envelope(eventId, "message.received", "whatsapp", "acc_1", Instant.now(),
                data(messageId, attachmentsJson, extra));
        Response response = sender.post(sender.sign(eventId, body, TimestampForm.RFC3339));
        assertThat(response.status()).as(response.body()).isEqualTo(200);
        return response;
    }

    private static void update(String eventId, String messageId, String attachmentsJson) {
        byte[] body = SignedDeliverySender.envelope(eventId, "message.updated", "whatsapp", "acc_1", Instant.now(),
                data(messageId, attachmentsJson, ""));
        assertThat(sender.post(sender.sign(eventId, body, TimestampForm.RFC3339)).status()).isEqualTo(200);
    }

    private static String data(String messageId, String attachmentsJson, String extra) {
        return "{\"conversation\":{\"id\":\"conv_a\",\"type\":\"user\"},\"sender\":{\"id\":\"u1\",\"type\":\"user\",\"name\":\"A\"},"
                + "\"message\":{\"id\":\"" + messageId + "\",\"type\":\"image\",\"caption\":\"look\",\"direction\":\"in\","
                + "\"sent_at\":\"2026-07-01T09:14:59Z\",\"attachments\":" + attachmentsJson + extra + "}}";
    }

    private void awaitStatus(int position, String status) {
        Await.until("attachment " + position + " " + status, WAIT, () -> status.equals(status(position)));
    }

    /** The dispatcher records the outcome just after the fetcher returns. */
    private void awaitWork(String stateAndAttempts) {
        Await.until("attachment work " + stateAndAttempts, WAIT, () -> stateAndAttempts.equals(
                Sql.string(db, "SELECT state || ' ' || attempts FROM work_item WHERE kind = 'attachment'")));
    }

    private String status(int position) {
        return column(position, "status");
    }

    private String column(int position, String column) {
        return Sql.string(db, "SELECT " + column + " FROM message_attachment WHERE position = " + position);
    }

}
