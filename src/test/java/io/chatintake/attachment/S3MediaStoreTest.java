package io.chatintake.attachment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Settings;
import io.chatintake.sim.MediaHost;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.Content;
import io.chatintake.testkit.LogLine;
import io.chatintake.testkit.S3Server;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.testkit.WebhookServer;
import io.chatintake.work.WorkDispatcher;
import io.chatintake.work.WorkQueue;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The S3 media store against a real S3 API server (S3Mock) on loopback: content-addressed keys,
 * each content stored once (also when two stores race), clear start errors naming the key, the
 * attachment fetcher storing into the bucket through the real dispatcher, and no credential in
 * any log line (the store's and the AWS SDK's own, at DEBUG).
 */
@ExtendWith(TestDatabase.class)
class S3MediaStoreTest {
    private static final String BUCKET = "media";
    private static final String KEY_ID = "AKIACHATINTAKETEST01";
    private static final String SECRET_KEY = "s3-secret-value-never-logged-9f2c";

    private static S3Server s3;
    private static Path dataDir;
    private static MediaStore store;

    private final ListAppender<ILoggingEvent> logs = new ListAppender<>();

    @BeforeAll
    static void start() throws Exception {
        s3 = S3Server.start(BUCKET);
        dataDir = Files.createTempDirectory("chat-intake-s3-media");
        store = MediaStore.configured(settings(Map.of()), dataDir.resolve("media"), Duration.ofSeconds(120));
    }

    @AfterAll
    static void stop() {
        store.close();
        s3.close();
    }

    @BeforeEach
    void captureLogs() {
        logs.start();
        root().addAppender(logs);
        ((Logger) LoggerFactory.getLogger("io.chatintake")).setLevel(Level.DEBUG);
        ((Logger) LoggerFactory.getLogger("software.amazon.awssdk")).setLevel(Level.DEBUG);
    }

    @AfterEach
    void noCredentialWasLogged() {
        root().detachAppender(logs);
        ((Logger) LoggerFactory.getLogger("io.chatintake")).setLevel(null);
        ((Logger) LoggerFactory.getLogger("software.amazon.awssdk")).setLevel(null);
        for (ILoggingEvent event : logs.list) {
            assertThat(LogLine.render(event)).as("a log line").doesNotContain(SECRET_KEY).doesNotContain(KEY_ID);
        }
    }

    @Test
    void aFileIsStoredUnderItsContentKeyAndReadBack() throws Exception {
        byte[] content = Content.random(70_000);

        MediaStore.StoredFile file = store.save(new ByteArrayInputStream(content), 1_000_000);

        String hash = Content.sha256(content);
        assertThat(file.sha256()).isEqualTo(hash);
        assertThat(file.relativePath()).isEqualTo(hash.substring(0, 2) + "/" + hash);
        assertThat(file.size()).isEqualTo(70_000);
        assertThat(file.duplicate()).isFalse();
        try (InputStream in = store.open(file.relativePath())) {
            assertThat(in.readAllBytes()).isEqualTo(content);
        }
        assertThatThrownBy(() -> store.open("00/" + "0".repeat(64))).isInstanceOf(NoSuchFileException.class);
        assertThat(spooled()).as("nothing left in media/tmp").isEmpty();
    }

    @Test
    void theSameContentIsStoredOnceAndAFileOverTheCapNotAtAll() throws Exception {
        byte[] content = Content.random(1_000);

        MediaStore.StoredFile first = store.save(new ByteArrayInputStream(content), 10_000);
        MediaStore.StoredFile second = store.save(new ByteArrayInputStream(content), 10_000);

        assertThat(first.duplicate()).isFalse();
        assertThat(second.duplicate()).isTrue();
        assertThat(second.relativePath()).isEqualTo(first.relativePath());
        assertThat(objectsUnder(first.relativePath())).isEqualTo(1);

        byte[] big = Content.random(10_001);
        assertThatThrownBy(() -> store.save(new ByteArrayInputStream(big), 10_000)).isInstanceOf(MediaStore.TooLargeException.class);
        assertThat(objectsUnder(Content.sha256(big).substring(0, 2) + "/" + Content.sha256(big))).isZero();
        assertThat(spooled()).isEmpty();
    }

    @Test
    void twoConcurrentStoresOfTheSameContentMakeOneObjectAndOneDuplicate() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            for (int round = 0; round < 10; round++) {
                byte[] content = Content.random(20_000);
                CyclicBarrier together = new CyclicBarrier(2);
                List<Future<MediaStore.StoredFile>> saves = new ArrayList<>();
                for (int i = 0; i < 2; i++) {
                    saves.add(pool.submit(() -> {
                        together.await();
                        return store.save(new ByteArrayInputStream(content), 100_000);
                    }));
                }
                List<Boolean> duplicates = new ArrayList<>();
                for (Future<MediaStore.StoredFile> save : saves) {
                    duplicates.add(save.get().duplicate());
                }
                assertThat(duplicates).as("round %d: one store wrote it, the other saw a duplicate", round)
                        .containsExactlyInAnyOrder(false, true);
                assertThat(objectsUnder(saves.get(0).get().relativePath())).isEqualTo(1);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aMissingBucketOrAnIncompleteSettingStopsTheStartNamingTheKey() {
        assertThatThrownBy(() -> MediaStore.configured(settings(Map.of("media.s3.bucket", "no-such-bucket")), dataDir, Duration.ofSeconds(120)))
                .isInstanceOf(ConfigurationException.class)
                .hasMessage("MEDIA_S3_BUCKET (media.s3.bucket): no bucket 'no-such-bucket' at " + s3.endpoint());
        assertThatThrownBy(() -> MediaStore.configured(Settings.of(Map.of("media.store", "s3")), dataDir, Duration.ofSeconds(120)))
                .hasMessage("MEDIA_S3_BUCKET (media.s3.bucket) must name a bucket when media.store=s3");
        assertThatThrownBy(() -> MediaStore.configured(Settings.of(Map.of("media.store", "nfs")), dataDir, Duration.ofSeconds(120)))
                .hasMessage("MEDIA_STORE (media.store) must be local or s3, got 'nfs'");
        assertThatThrownBy(() -> MediaStore.configured(settings(Map.of("media.s3.secret-access-key", "")), dataDir, Duration.ofSeconds(120)))
                .hasMessageStartingWith("MEDIA_S3_SECRET_ACCESS_KEY (media.s3.secret-access-key) must be set too");
        assertThatThrownBy(() -> MediaStore.configured(settings(Map.of("media.s3.endpoint", "minio:9000")), dataDir, Duration.ofSeconds(120)))
                .hasMessage("MEDIA_S3_ENDPOINT (media.s3.endpoint) must be an http(s) URL such as http://minio:9000");
        assertThatThrownBy(() -> MediaStore.configured(settings(Map.of("media.s3.endpoint", "http://127.0.0.1:1")), dataDir, Duration.ofSeconds(120)))
                .hasMessageStartingWith("MEDIA_S3_ENDPOINT (media.s3.endpoint): cannot reach S3 bucket 'media' at http://127.0.0.1:1")
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain(SECRET_KEY));
        assertThat(MediaStore.configured(Settings.of(Map.of()), dataDir, Duration.ofSeconds(120))).isInstanceOf(LocalMediaStore.class);
    }

    @Test
    void theFetcherStoresADownloadIntoTheBucket(DataSource db) throws Exception {
        byte[] content = Content.random(12_345);
        try (MediaHost host = MediaHost.start()) {
            String url = host.publish(content, "image/png", Duration.ofMinutes(5));
            Map<String, String> values = new HashMap<>(Map.of("media.store", "s3", "media.s3.bucket", BUCKET,
                    "media.s3.endpoint", s3.endpoint(), "media.s3.path-style-access", "true",
                    "media.s3.access-key-id", KEY_ID, "media.s3.secret-access-key", SECRET_KEY));
            values.putAll(Map.of("chat-intake.data-dir", dataDir.toString(), "work.concurrency", "1",
                    "work.poll-interval-millis", "50"));
            values.putAll(MediaHost.ALLOWED);
            try (WebhookServer server = WebhookServer.builder(db).routeFiles("file:routes/attachments.yaml").settings(values).start()) {
                long child = Sql.count(db, "INSERT INTO channel_message (workspace, provider, account_id, conversation_id, message_id,"
                        + " attachments, first_event_id) VALUES ('ws', 'whatsapp', 'acc', 'c1', 'm1', '[{\"url\":\"" + url + "\"}]', 'e1')"
                        + " RETURNING id");
                try (Connection c = db.getConnection()) {
                    c.setAutoCommit(false);
                    AttachmentStore.recordFor(c, child);
                    c.commit();
                }
                WorkDispatcher.nudge(server.context());
                Await.until("the attachment stored", Duration.ofSeconds(30),
                        () -> "stored".equals(Sql.string(db, "SELECT status FROM message_attachment")));
            }
            String key = Sql.string(db, "SELECT media_path FROM message_attachment");
            assertThat(key).isEqualTo(Content.sha256(content).substring(0, 2) + "/" + Content.sha256(content));
            try (InputStream in = store.open(key)) {
                assertThat(in.readAllBytes()).isEqualTo(content);
            }
            assertThat(Files.exists(dataDir.resolve("media").resolve(key))).as("not on local disk").isFalse();
            assertThat(logs.list).extracting(ILoggingEvent::getFormattedMessage)
                    .contains("attachments: files kept in S3 bucket 'media' at " + s3.endpoint())
                    .noneMatch(line -> line.contains(url));
        }
    }

    private static Settings settings(Map<String, String> overrides) {
        Map<String, String> values = new HashMap<>(Map.of("media.store", "s3", "media.s3.bucket", BUCKET,
                "media.s3.endpoint", s3.endpoint(), "media.s3.path-style-access", "true",
                "media.s3.access-key-id", KEY_ID, "media.s3.secret-access-key", SECRET_KEY));
        values.putAll(overrides);
        return Settings.of(values);
    }

    /** Objects in the bucket whose key starts with this one, as S3 lists them. */
    private static int objectsUnder(String key) {
        try (S3Client client = S3Client.builder().region(Region.US_EAST_1).endpointOverride(URI.create(s3.endpoint()))
                .forcePathStyle(true).credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(KEY_ID, SECRET_KEY)))
                .build()) {
            return client.listObjectsV2(l -> l.bucket(BUCKET).prefix(key)).keyCount();
        }
    }

    private static List<Path> spooled() throws Exception {
        Path tmp = dataDir.resolve("media/tmp");
        try (var files = Files.list(tmp)) {
            return files.toList();
        }
    }

    private static Logger root() {
        return (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    }

}
