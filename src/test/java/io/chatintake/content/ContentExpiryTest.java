package io.chatintake.content;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.attachment.MediaStore;
import io.chatintake.channel.ChildMessages;
import io.chatintake.channel.webhook.WebhookEventSink;
import io.chatintake.channel.webhook.DerivingEventStore;
import io.chatintake.channel.webhook.WebhookEventDeriver;
import io.chatintake.channel.webhook.WebhookEventStore;
import io.chatintake.config.Settings;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.testkit.RouteFile;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.work.Retention;
import io.chatintake.work.WorkQueue;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * retention.content-days against the real schema and intake statements: old content goes (raw
 * JSON, texts, attachment URLs and files, effect results), the books stay (rows, states, counts,
 * the graphs' figures), a redelivery of an event whose content expired is still a duplicate, and
 * its item counts as one whose content is gone.
 */
@ExtendWith(TestDatabase.class)
class ContentExpiryTest {
    private static final String OLD = "OLDCONTENT";
    private static final String YOUNG = "YOUNGCONTENT";

    private final DataSource db = TestDatabase.dataSource();

    @Test
    void contentGoesAfterContentDaysAndTheBooksStay() throws Exception {
        Path dataDir = Files.createTempDirectory("chat-intake-expiry");
        Settings settings = TestDatabase.commandSettings(Map.of("chat-intake.data-dir", dataDir.toString(),
                "retention.content-days", "1", "retention.metadata-days", "400"));
        DerivingEventStore intake = new DerivingEventStore(db, "default", ChildMessages.listener());
        byte[] oldBody = body("old-1", OLD);
        intake.store(RouteFile.unifyPortEvents(oldBody, "dlv-old-1"));
        intake.store(RouteFile.unifyPortEvents(body("young-1", YOUNG), "dlv-young-1"));
        try (MediaStore media = MediaStore.configured(settings)) {
            for (List<Object> row : Sql.rows(db, "SELECT a.id, m.text FROM message_attachment a JOIN channel_message m ON m.id = a.channel_message_id")) {
                MediaStore.StoredFile file = media.save(new ByteArrayInputStream((row.get(1) + " file bytes").getBytes(StandardCharsets.UTF_8)),
                        1_000_000);
                Sql.execute(db, "UPDATE message_attachment SET status = 'stored', media_path = '" + file.relativePath() + "', sha256 = '"
                        + file.sha256() + "' WHERE id = " + row.get(0));
            }
        }
        // The old event's handler ran out of attempts; its reply had been recorded. Everything of it is two days old.
        Sql.execute(db, """
                UPDATE work_item SET state = 'parked', attempts = 5 WHERE source_key = 'default:unifyport:old-1';
                UPDATE work_item SET state = 'done', done_at = now() WHERE kind = 'attachment';
                INSERT INTO outbound_effect (effect_key, work_item_id, state, started_at, done_at, result)
                SELECT 'reply:old-1', id, 'done', now() - interval '2 days', now() - interval '2 days', '{"said":"%1$s-REPLY"}'
                  FROM work_item WHERE source_key = 'default:unifyport:old-1';
                UPDATE webhook_event SET received_at = now() - interval '2 days' WHERE event_id = 'old-1';
                UPDATE channel_message SET updated_at = now() - interval '2 days', created_at = now() - interval '2 days'
                 WHERE first_event_id = 'old-1';
                UPDATE message_attachment a SET created_at = now() - interval '2 days' FROM channel_message m
                 WHERE m.id = a.channel_message_id AND m.first_event_id = 'old-1';
                INSERT INTO status_rollup (resolution, series, subject, bucket, value)
                VALUES ('hour', 'stored', 'unifyport/default', date_trunc('hour', now() - interval '2 days'), 1),
                       ('hour', 'stored', 'unifyport/default', date_trunc('hour', now()), 1);
                """.formatted(OLD));
        String rowsBefore = rowCounts();

        Map<String, Long> dryRun = ContentExpiry.from(settings, db).dryRun();
        assertThat(dryRun).containsEntry("webhook_event", 1L).containsEntry("channel_message", 1L)
                .containsEntry("message_attachment", 1L).containsEntry("outbound_effect", 1L);
        Map<String, Long> expired = ContentExpiry.from(settings, db).expire();
        Retention.from(settings, db).purge();

        assertThat(expired).isEqualTo(dryRun);
        String everything = Sql.string(db, """
                SELECT string_agg(coalesce(convert_from(body, 'UTF8'), '') || coalesce(payload::text, ''), ' ') FROM webhook_event""")
                + Sql.string(db, "SELECT string_agg(concat(text, caption, attachments::text), ' ') FROM channel_message")
                + Sql.string(db, "SELECT string_agg(concat(url, title), ' ') FROM message_attachment")
                + Sql.string(db, "SELECT string_agg(coalesce(result, ''), ' ') FROM outbound_effect");
        assertThat(everything).doesNotContain(OLD).contains(YOUNG);
        assertThat(files(dataDir)).noneMatch(content -> content.contains(OLD)).anyMatch(content -> content.contains(YOUNG));
        assertThat(rowCounts()).as("the books: every row, state and count stays").isEqualTo(rowsBefore);

        assertThat(Sql.count(db, "SELECT count(*) FROM status_rollup WHERE bucket < now() - interval '1 day'"))
                .as("the graphs' figures of the hours whose content went").isEqualTo(1);

        List<WebhookEventSink.Stored> again = intake.store(RouteFile.unifyPortEvents(oldBody, "dlv-old-1-again"));
        assertThat(again).singleElement().satisfies(stored -> assertThat(stored.firstDelivery()).as("a duplicate").isFalse());
        assertThat(Sql.count(db, "SELECT delivery_count FROM webhook_event WHERE event_id = 'old-1'")).isEqualTo(2);

        long parked = Sql.count(db, "SELECT id FROM work_item WHERE source_key = 'default:unifyport:old-1'");
        try (Connection c = db.getConnection()) {
            assertThat(ContentRemoval.goneFor(c, parked)).as("a retry of its item is refused (OperatorActionsTest)").isTrue();
        }

        assertThat(ContentExpiry.from(settings, db).expire().values()).as("a second pass finds nothing").allMatch(n -> n == 0);
    }

    @Test
    void anEventNotDerivedYetKeepsItsContentUntilItsWorkIsDone() throws Exception {
        Settings settings = TestDatabase.commandSettings(Map.of("chat-intake.data-dir", Files.createTempDirectory("chat-intake-expiry").toString(),
                "retention.content-days", "1", "retention.metadata-days", "400"));
        // Stored, then no deriver ran for two days (every runner down, or derivation failing all along).
        new WebhookEventStore(db, Duration.ofSeconds(5), "default", "unifyport", "unifyport-event", () -> { })
                .store(RouteFile.unifyPortEvents(body("late-1", OLD), "dlv-late-1"));
        Sql.execute(db, "UPDATE webhook_event SET received_at = now() - interval '2 days'");

        assertThat(ContentExpiry.from(settings, db).expire()).containsEntry("webhook_event", 0L);
        assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event WHERE body IS NOT NULL AND payload IS NOT NULL AND child IS NOT NULL"))
                .as("what its derivation and its handler will read").isEqualTo(1);

        new WebhookEventDeriver(db, ChildMessages.listener()).deriveNext(10);
        assertThat(Sql.string(db, "SELECT text FROM channel_message")).as("its child, derived from the kept content").isEqualTo(OLD + "-TEXT");
        assertThat(ContentExpiry.from(settings, db).expire()).as("its handler has yet to run").containsEntry("webhook_event", 0L);
        Sql.execute(db, "UPDATE work_item SET state = 'done', done_at = now()");
        assertThat(ContentExpiry.from(settings, db).expire()).containsEntry("webhook_event", 1L);
    }

    private static byte[] body(String eventId, String marker) {
        return SignedDeliverySender.envelope(eventId, "message.received", "whatsapp", "acc_1", Instant.now(), """
                {"conversation":{"id":"conv-%1$s","type":"user"},"sender":{"id":"u-%1$s","type":"user"},
                 "message":{"id":"m-%1$s","type":"image","text":"%2$s-TEXT","sent_at":"2026-12-01T10:00:00Z",
                            "attachments":[{"url":"https://media.example/%2$s-URL?sig=1","title":"%2$s-TITLE"}]}}"""
                .formatted(eventId, marker));
    }

    private String rowCounts() {
        return Sql.string(db, """
                SELECT concat_ws(',', (SELECT count(*) FROM webhook_event), (SELECT count(*) FROM channel_message),
                       (SELECT count(*) FROM message_attachment), (SELECT count(*) FROM outbound_effect),
                       (SELECT string_agg(kind || ':' || state, ';' ORDER BY id) FROM work_item),
                       (SELECT sum(delivery_count) FROM webhook_event WHERE event_id = 'young-1'))""");
    }

    private static List<String> files(Path dataDir) throws Exception {
        try (Stream<Path> walk = Files.walk(dataDir.resolve("media"))) {
            return walk.filter(Files::isRegularFile).filter(f -> !f.startsWith(dataDir.resolve("media/tmp"))).map(f -> {
                try {
                    return Files.readString(f, StandardCharsets.ISO_8859_1);
                } catch (java.io.IOException e) {
                    throw new IllegalStateException(e);
                }
            }).toList();
        }
    }
}
