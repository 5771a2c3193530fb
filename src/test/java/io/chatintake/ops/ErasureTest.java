package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.chatintake.attachment.MediaStore;
import io.chatintake.channel.ChildMessages;
import io.chatintake.channel.webhook.WebhookEventStore;
import io.chatintake.config.Settings;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.testkit.RouteFile;
import io.chatintake.testkit.S3Server;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.work.WorkItem;
import io.chatintake.work.WorkQueue;
import io.chatintake.work.WorkRun;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * Erasure on request through the CLI, against the real schema, real intake statements, a real
 * local media directory and a real S3 API server (S3Mock): afterwards neither a pg_dump of the
 * database nor the media stores hold the erased conversation's markers, other conversations keep
 * theirs, waiting work is erased, and the erasure is recorded with counts only.
 */
@ExtendWith(TestDatabase.class)
class ErasureTest {
    private static final String BUCKET = "erase-media";
    private static final String KEY_ID = "AKIACHATINTAKEERASE1";
    private static final String SECRET_KEY = "s3-secret-erase-test-never-logged";
    private static final long BOT_ID = 7001;
    private static final String ERASED = "ERASEDMARK";
    private static final String KEPT = "KEPTMARK";

    private static S3Server s3;
    private static Path dataDir;

    private final DataSource db = TestDatabase.dataSource();

    @BeforeAll
    static void start() throws IOException {
        s3 = S3Server.start(BUCKET);
        dataDir = Files.createTempDirectory("chat-intake-erase");
    }

    @AfterAll
    static void stop() {
        s3.close();
    }

    private static Settings settings(boolean inS3) {
        Map<String, String> more = new HashMap<>(Map.of("chat-intake.data-dir", dataDir.toString()));
        if (inS3) {
            more.putAll(Map.of("media.store", "s3", "media.s3.bucket", BUCKET, "media.s3.endpoint", s3.endpoint(),
                    "media.s3.region", "us-east-1", "media.s3.path-style-access", "true",
                    "media.s3.access-key-id", KEY_ID, "media.s3.secret-access-key", SECRET_KEY));
        }
        return TestDatabase.commandSettings(more);
    }

    @Test
    void aTelegramChatAndAUnifyPortConversationWithLocalFilesLeaveNoTrace() throws Exception {
        Settings settings = settings(false);
        seedTelegram();
        seedUnifyPort(settings, "erase-local");

        String dryRun = erase(settings, "--telegram", "sales:4242", "--dry-run");
        assertThat(dryRun).contains("would erase 2 telegram updates").contains("nothing changed");
        assertThat(pgDump()).as("a dry run changes nothing").contains(ERASED + "-TG-TEXT");

        assertThat(erase(settings, "--telegram", "sales:4242", "--by", "dpo"))
                .isEqualTo("telegram sales:4242 erased by dpo: 2 telegram updates, 0 webhook events, 1 messages, 0 attachments,"
                        + " 0 media files, 1 effect results, 1 work items erased, 0 staged work dropped");
        String conversation = erase(settings, "--conversation", "unifyport:default:acc_1:conv-erase-local", "--by", "dpo");
        assertThat(conversation).contains("2 webhook events, 2 messages, 2 attachments, 2 media files, 1 effect results, 3 work items erased");

        assertNothingLeft(settings);
        assertThat(erase(settings, "--conversation", "unifyport:default:acc_1:conv-erase-local", "--by", "dpo"))
                .as("running it again is harmless").endsWith("nothing left to erase (erased already, or never stored); nothing changed");
    }

    @Test
    void aUnifyPortConversationWithFilesInS3LeavesNoTrace() throws Exception {
        Settings settings = settings(true);
        seedUnifyPort(settings, "erase-s3");

        String conversation = erase(settings, "--conversation", "unifyport:default:acc_1:conv-erase-s3", "--by", "dpo");

        assertThat(conversation).contains("2 attachments, 2 media files");
        assertNothingLeft(settings);
    }

    @Test
    void aSenderIsFoundByTheEnvelopeAcrossConversations() throws Exception {
        Settings settings = settings(false);
        seedUnifyPort(settings, "erase-sender");

        String sender = erase(settings, "--sender", "unifyport:default:acc_1:user-erase-sender", "--by", "dpo");

        assertThat(sender).contains("2 webhook events, 2 messages, 2 attachments");
        assertThat(pgDump()).doesNotContain(ERASED).contains(KEPT);
    }

    @Test
    void erasedWorkIsNeverClaimedAndTheChatsLaterWorkStillRuns() throws Exception {
        WorkQueue queue = new WorkQueue(db);
        try (Connection c = db.getConnection()) {
            WorkQueue.schedule(c, List.of(new WorkQueue.NewWork("chat-work", "k1", 1, "c1"), new WorkQueue.NewWork("chat-work", "k2", 2, "c1")));
            assertThat(WorkQueue.erase(c, new Long[] {Sql.count(db, "SELECT id FROM work_item WHERE source_key = 'k1'")})).isEqualTo(1);
        }

        WorkRun run = queue.claimLane("process-a", Duration.ofSeconds(60), 100, Set.of("chat-work"), Set.of("chat-work"));

        assertThat(run.items()).extracting(WorkItem::sourceKey).containsExactly("k2");
        assertThat(Sql.string(db, "SELECT state FROM work_item WHERE source_key = 'k1'")).isEqualTo("erased");
        assertThat(queue.retry(Sql.count(db, "SELECT id FROM work_item WHERE source_key = 'k1'"))).as("never retried").isZero();
    }

    /** Two updates of chat 4242 (one handled with a reply, one waiting) and one of another chat. */
    private void seedTelegram() {
        Sql.execute(db, """
                INSERT INTO telegram_checkpoint (bot_id, bot_name) VALUES (%1$d, 'sales');
                INSERT INTO telegram_update (bot_id, update_id, update_type, payload) VALUES
                    (%1$d, 1, 'message', '{"update_id":1,"message":{"message_id":1,"chat":{"id":4242},"text":"%2$s-TG-TEXT one"}}'),
                    (%1$d, 2, 'message', '{"update_id":2,"message":{"message_id":2,"chat":{"id":4242},"text":"%2$s-TG-TEXT two"}}'),
                    (%1$d, 3, 'message', '{"update_id":3,"message":{"message_id":3,"chat":{"id":5151},"text":"%3$s-TG-TEXT"}}');
                INSERT INTO work_item (kind, source_key, source_id, chat_key, state, done_at)
                SELECT 'telegram-update', '%1$d:' || update_id, id, '%1$d:' || (payload #>> '{message,chat,id}'),
                       CASE update_id WHEN 1 THEN 'done' ELSE 'pending' END, CASE update_id WHEN 1 THEN now() END
                  FROM telegram_update;
                INSERT INTO telegram_update_text (update_row_id, text) SELECT id, telegram_text(payload) FROM telegram_update;
                INSERT INTO outbound_effect (effect_key, work_item_id, state, done_at, result)
                SELECT 'reply:' || source_key, id, 'done', now(), '{"text":"you wrote %2$s-TG-REPLY"}' FROM work_item WHERE source_key = '%1$d:1';
                INSERT INTO outbound_effect (effect_key, work_item_id, state, done_at, result)
                SELECT 'reply:' || source_key, id, 'done', now(), '{"text":"%3$s-TG-REPLY"}' FROM work_item WHERE source_key = '%1$d:3';
                INSERT INTO channel_message (workspace, provider, account_id, conversation_id, message_id, caption, first_event_id)
                VALUES ('default', 'telegram-bot', '%1$d', '4242', '9', '%2$s-TG-CAPTION', '%1$d:9'),
                       ('default', 'telegram-bot', '%1$d', '5151', '9', '%3$s-TG-CAPTION', '%1$d:10');
                """.formatted(BOT_ID, ERASED, KEPT));
    }

    /**
     * Through the real intake statements: two messages with an attachment each (the files stored
     * in the configured media store, as the fetcher stores them), a handled event with a reply,
     * and a message of another conversation with a file of its own.
     */
    private void seedUnifyPort(Settings settings, String name) throws Exception {
        WebhookEventStore intake = new WebhookEventStore(db, Duration.ofSeconds(5), "default", "unifyport", "unifyport-event",
                ChildMessages.listener(), () -> { });
        store(intake, "e1-" + name, "conv-" + name, "user-" + name, ERASED + "-UP-TEXT-" + name, null);
        store(intake, "e2-" + name, "conv-" + name, "user-" + name, null, ERASED + "-UP-CAPTION-" + name);
        store(intake, "k1-" + name, "conv-keep-" + name, "user-keep-" + name, KEPT + "-UP-TEXT-" + name, null);
        new WorkQueue(db).scheduleStaged(1000);
        try (MediaStore media = MediaStore.configured(settings)) {
            for (List<Object> row : Sql.rows(db, """
                    SELECT a.id, m.conversation_id FROM message_attachment a JOIN channel_message m ON m.id = a.channel_message_id
                     WHERE m.conversation_id LIKE '%""" + name + "' ORDER BY a.id")) {
                String marker = row.get(1).toString().startsWith("conv-keep") ? KEPT : ERASED;
                MediaStore.StoredFile file = media.save(new ByteArrayInputStream(
                        (marker + "-FILE-" + row.get(0) + " bytes of a photo").getBytes(StandardCharsets.UTF_8)), 1_000_000);
                Sql.execute(db, "UPDATE message_attachment SET status = 'stored', sha256 = '" + file.sha256() + "', media_path = '"
                        + file.relativePath() + "', size_bytes = " + file.size() + " WHERE id = " + row.get(0));
            }
        }
        Sql.execute(db, """
                UPDATE work_item SET state = 'done', done_at = now() WHERE source_key = 'default:unifyport:e1-%1$s';
                INSERT INTO outbound_effect (effect_key, work_item_id, state, done_at, result)
                SELECT 'reply:' || source_key, id, 'done', now(), '{"answer":"%2$s-UP-REPLY"}' FROM work_item
                 WHERE source_key = 'default:unifyport:e1-%1$s';""".formatted(name, ERASED));
    }

    private static void store(WebhookEventStore intake, String eventId, String conversation, String sender, String text,
                              String caption) throws Exception {
        String data = """
                {"conversation":{"id":"%s","type":"user"},"sender":{"id":"%s","type":"user","name":"%s-NAME"},
                 "message":{"id":"m-%s","type":"image","direction":"inbound","sent_at":"2026-12-01T10:00:00Z"%s%s,
                            "attachments":[{"url":"https://media.example/%s/%s-URL?sig=signed","title":"%s-TITLE"}]}}"""
                .formatted(conversation, sender, text == null ? ERASED : text.substring(0, text.indexOf('-')), eventId,
                        text == null ? "" : ",\"text\":\"" + text + "\"", caption == null ? "" : ",\"caption\":\"" + caption + "\"",
                        eventId, marker(text, caption), marker(text, caption));
        intake.store(RouteFile.unifyPortEvents(SignedDeliverySender.envelope(eventId, "message.received", "whatsapp", "acc_1",
                Instant.parse("2026-12-01T10:00:00Z"), data), "dlv-" + eventId));
    }

    private static String marker(String text, String caption) {
        return (text == null ? caption : text).startsWith(KEPT) ? KEPT : ERASED;
    }

    private void assertNothingLeft(Settings settings) throws Exception {
        String dump = pgDump();
        assertThat(dump).as("the database holds no erased content").doesNotContain(ERASED);
        assertThat(dump).as("other conversations are untouched").contains(KEPT + "-UP-TEXT").contains(KEPT + "-URL");
        assertThat(media(settings)).as("the media store").noneMatch(content -> content.contains(ERASED))
                .anyMatch(content -> content.contains(KEPT));
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'pending' AND (chat_key LIKE '%:conv-erase-%' OR chat_key = '"
                + BOT_ID + ":4242')")).as("no waiting work of the erased chats").isZero();
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'erased'")).isPositive();
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'pending' AND chat_key LIKE '%keep%'")).isPositive();
        List<List<Object>> erasures = Sql.rows(db, "SELECT erased_by, subject, key, counts::text FROM erasure");
        assertThat(erasures).isNotEmpty().allSatisfy(row -> {
            assertThat(row.get(0)).isEqualTo("dpo");
            assertThat(row.get(3).toString()).contains("\"messages\"").doesNotContain(ERASED);
        });
        assertThat(Sql.count(db, "SELECT count(*) FROM operator_action WHERE action = 'erase' AND acted_by = 'dpo'"))
                .isEqualTo(erasures.size());
    }

    private static String erase(Settings settings, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int code = new EraseCommand(settings, new PrintStream(out, true, StandardCharsets.UTF_8)).run(List.of(args));
        assertThat(code).isZero();
        return out.toString(StandardCharsets.UTF_8).strip();
    }

    /** Every file's content in the configured store (local directory or bucket). */
    private static List<String> media(Settings settings) throws IOException {
        List<String> contents = new ArrayList<>();
        if (settings.get("media.store").orElse("local").equals("s3")) {
            try (S3Client client = S3Client.builder().endpointOverride(java.net.URI.create(s3.endpoint())).region(Region.US_EAST_1)
                    .forcePathStyle(true).credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(KEY_ID, SECRET_KEY)))
                    .build()) {
                for (S3Object object : client.listObjectsV2(l -> l.bucket(BUCKET)).contents()) {
                    try (InputStream in = client.getObject(g -> g.bucket(BUCKET).key(object.key()))) {
                        contents.add(object.key() + " " + new String(in.readAllBytes(), StandardCharsets.UTF_8));
                    }
                }
            }
            return contents;
        }
        try (Stream<Path> files = Files.walk(dataDir.resolve("media"))) {
            for (Path file : files.filter(Files::isRegularFile).toList()) {
                contents.add(file + " " + Files.readString(file, StandardCharsets.ISO_8859_1));
            }
        }
        return contents;
    }

    /** The whole database as pg_dump writes it (the machine's client; the server is the same major version). */
    private static String pgDump() throws Exception {
        HikariDataSource pool = (HikariDataSource) TestDatabase.dataSource();
        Matcher url = Pattern.compile("jdbc:postgresql://([^:/]+):(\\d+)/([^?]+)").matcher(pool.getJdbcUrl());
        assertThat(url.find()).isTrue();
        ProcessBuilder dump = new ProcessBuilder("pg_dump", "-h", url.group(1), "-p", url.group(2), "-U", pool.getUsername(),
                "--no-owner", url.group(3)).redirectErrorStream(true);
        dump.environment().put("PGPASSWORD", pool.getPassword() == null ? "" : pool.getPassword());
        Process process = dump.start();
        String text = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor()).as(text.length() > 500 ? text.substring(0, 500) : text).isZero();
        return text;
    }
}
