package io.chatintake.work;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.app.Runner;
import io.chatintake.channel.ChildMessages;
import io.chatintake.testkit.RouteFile;
import io.chatintake.channel.webhook.DerivingEventStore;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Retention against the real schema: what goes, in batches, while intake runs; what always stays. */
@ExtendWith(TestDatabase.class)
class RetentionTest {
    private static final int OLD_DONE_UPDATES = 3000;

    private final DataSource db = TestDatabase.dataSource();

    private static Map<String, Integer> days(int value) {
        return Map.of("retention.telegram-update-days", value, "retention.webhook-event-days", value, "retention.work-item-days", value,
                "retention.outbound-effect-days", value, "retention.album-days", value, "retention.dedupe-key-days", value);
    }

    /**
     * Old finished rows, and beside each kind the old rows that must stay (unfinished, parked,
     * undecided) and young ones. Ids overlap between tables, as they do in production: an
     * unfinished item of one table's kind never holds another table's row with the same id.
     */
    private void seed() {
        Sql.execute(db, """
                INSERT INTO telegram_update (bot_id, update_id, update_type, payload, received_at)
                SELECT 1, g, 'message', '{"update_id":1}', now() - interval '40 days' FROM generate_series(1, %d) g;
                INSERT INTO telegram_update (bot_id, update_id, update_type, payload, received_at) VALUES
                    (1, 100001, 'message', '{}', now() - interval '40 days'),   -- its work is pending
                    (1, 100002, 'message', '{}', now() - interval '40 days'),   -- its work is parked
                    (1, 100003, 'message', '{}', now() - interval '1 day');     -- young
                INSERT INTO work_item (kind, source_key, source_id, state, done_at, created_at)
                SELECT 'telegram-update', '1:' || update_id, id,
                       CASE update_id WHEN 100001 THEN 'pending' WHEN 100002 THEN 'parked' ELSE 'done' END,
                       CASE WHEN update_id NOT IN (100001, 100002) THEN received_at + interval '1 minute' END, received_at
                  FROM telegram_update;

                INSERT INTO webhook_event (workspace, channel, event_id, body, received_at)
                SELECT 'default', 'unifyport', 'old' || g, '\\x7b7d', now() - interval '40 days' FROM generate_series(1, 6) g;
                INSERT INTO webhook_event (workspace, channel, event_id, body, received_at)
                    VALUES ('default', 'unifyport', 'young', '\\x7b7d', now() - interval '1 day');
                INSERT INTO work_item (kind, source_key, source_id, state, done_at, created_at)
                SELECT 'unifyport-event', 'default:unifyport:' || event_id, id, CASE event_id WHEN 'old6' THEN 'failed' ELSE 'done' END,
                       CASE WHEN event_id <> 'old6' THEN received_at END, received_at FROM webhook_event;
                -- stored, its work staged and not yet an item (a scheduler that has been down for weeks)
                INSERT INTO webhook_event (workspace, channel, event_id, body, received_at)
                    VALUES ('default', 'unifyport', 'old-staged', '\\x7b7d', now() - interval '40 days');
                INSERT INTO work_staged (kind, source_key, source_id)
                SELECT 'unifyport-event', 'default:unifyport:old-staged', id FROM webhook_event WHERE event_id = 'old-staged';

                INSERT INTO work_item (kind, source_key, source_id, state, done_at, created_at) VALUES
                    ('album-child', 'album-child:1', 1, 'done', now() - interval '39 days', now() - interval '40 days'),
                    ('album-child', 'album-child:2', 2, 'done', now() - interval '39 days', now() - interval '40 days'),
                    ('attachment', 'attachment:1', 1, 'done', now() - interval '39 days', now() - interval '40 days'),
                    ('attachment', 'attachment:2', 2, 'parked', NULL, now() - interval '40 days'),
                    ('attachment', 'attachment:3', 3, 'done', now() - interval '1 day', now() - interval '2 days');

                INSERT INTO album (album_key, workspace, provider, account_id, conversation_id, album_id, first_child_at, last_child_at,
                                   decided_version, decided_at, decide_after, needs_person) VALUES
                    ('old', 'default', 'p', 'a', 'c', 'old', now() - interval '41 days', now() - interval '41 days', 1, now() - interval '40 days', NULL, false),
                    ('open', 'default', 'p', 'a', 'c', 'open', now() - interval '41 days', now() - interval '41 days', 0, NULL, now() + interval '1 minute', false),
                    ('late-open', 'default', 'p', 'a', 'c', 'late', now() - interval '41 days', now(), 1, now() - interval '40 days', now() + interval '1 minute', false),
                    ('person', 'default', 'p', 'a', 'c', 'person', now() - interval '41 days', now() - interval '41 days', 1, now() - interval '40 days', NULL, true),
                    ('unhandled', 'default', 'p', 'a', 'c', 'unhandled', now() - interval '41 days', now() - interval '41 days', 1, now() - interval '40 days', NULL, false),
                    ('young', 'default', 'p', 'a', 'c', 'young', now() - interval '2 days', now() - interval '2 days', 1, now() - interval '1 day', NULL, false);
                INSERT INTO album_decision (album_key, version, kind, child_ids, message_ids, totals_seen, indexes_seen, completed_by)
                SELECT album_key, 1, 'provisional', '[]', '[]', '[]', '[]', 'timeout' FROM album WHERE decided_version = 1;
                INSERT INTO work_item (kind, source_key, source_id, state, done_at, created_at)
                SELECT 'album-decision', album_key || ':1', id, CASE album_key WHEN 'unhandled' THEN 'pending' ELSE 'done' END,
                       CASE WHEN album_key <> 'unhandled' THEN now() - interval '40 days' END, now() - interval '40 days' FROM album_decision;

                INSERT INTO outbound_effect (effect_key, work_item_id, state, started_at, done_at) VALUES
                    ('item-gone', 999999999, 'done', now() - interval '40 days', now() - interval '40 days'),
                    ('item-purged-this-pass', (SELECT id FROM work_item WHERE source_key = '1:1'), 'done', now() - interval '40 days', now() - interval '40 days'),
                    ('item-pending', (SELECT id FROM work_item WHERE source_key = '1:100001'), 'done', now() - interval '40 days', now() - interval '40 days'),
                    ('never-confirmed', 999999998, 'started', now() - interval '40 days', NULL),
                    ('young', 999999997, 'done', now() - interval '1 day', now() - interval '1 day');
                ANALYZE;
                """.formatted(OLD_DONE_UPDATES));
    }

    private String tableCounts() {
        return List.of("telegram_update", "webhook_event", "work_item", "outbound_effect", "album", "album_decision").stream()
                .map(t -> t + "=" + Sql.count(db, "SELECT count(*) FROM " + t)).collect(Collectors.joining(" "));
    }

    @Test
    void oldFinishedRowsGoInBatchesWhileIntakeRunsAndUnfinishedOnesStay() throws Exception {
        seed();
        Retention retention = new Retention(db, days(30), 250);

        String before = tableCounts();
        List<Retention.Outcome> dryRun = retention.dryRun();
        assertThat(tableCounts()).as("a dry run changes nothing").isEqualTo(before);

        // intake keeps storing events (each with its work item) for as long as the purge runs
        DerivingEventStore intake = new DerivingEventStore(db, "default", ChildMessages.listener());
        AtomicBoolean purging = new AtomicBoolean(true);
        AtomicInteger stored = new AtomicInteger();
        CompletableFuture<Void> deliveries = CompletableFuture.runAsync(() -> {
            while (purging.get() || stored.get() < 20) {
                String id = "live" + stored.incrementAndGet();
                try {
                    intake.store(RouteFile.unifyPortEvents(SignedDeliverySender.envelope(id, "conversation.created",
                            "whatsapp", "acc", Instant.now(), "{}"), "dlv-" + id));
                } catch (java.sql.SQLException e) {
                    throw new IllegalStateException(e);
                }
            }
        });
        List<Retention.Outcome> purged;
        try {
            purged = retention.purge();
        } finally {
            purging.set(false);
        }
        deliveries.get();

        // The dry run counts each table as it stands; an effect whose work item goes in the same pass is the one difference.
        assertThat(purged.subList(0, 4)).isEqualTo(dryRun.subList(0, 4));
        assertThat(dryRun.get(4).rows()).isEqualTo(1);
        assertThat(Retention.describe(purged)).isEqualTo("telegram_update " + OLD_DONE_UPDATES + " (+" + OLD_DONE_UPDATES
                + " work items), webhook_event 5 (+5 work items), album 1 (+1 work items), work_item 3, outbound_effect 2,"
                + " webhook_event_purged 0");
        assertThat(Sql.string(db, "SELECT string_agg(workspace || ':' || channel || ':' || event_id, ',' ORDER BY event_id)"
                + " FROM webhook_event_purged")).as("the keys of the deleted events stay").isEqualTo(
                "default:unifyport:old1,default:unifyport:old2,default:unifyport:old3,default:unifyport:old4,default:unifyport:old5");
        assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event WHERE event_id LIKE 'live%'")).isEqualTo(stored.get());
        intake.deriveAll();
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE source_key LIKE 'default:unifyport:live%'")).isEqualTo(stored.get());
        // what stays: unfinished, parked and young rows, and everything that belongs to them
        assertThat(Sql.string(db, "SELECT string_agg(update_id::text, ',' ORDER BY update_id) FROM telegram_update"))
                .isEqualTo("100001,100002,100003");
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'telegram-update'")).isEqualTo(3);
        assertThat(Sql.string(db, "SELECT string_agg(event_id, ',' ORDER BY event_id) FROM webhook_event WHERE event_id NOT LIKE 'live%'"))
                .isEqualTo("old-staged,old6,young");
        assertThat(Sql.string(db, "SELECT string_agg(source_key, ',' ORDER BY source_key) FROM work_item WHERE kind = 'attachment'"))
                .isEqualTo("attachment:2,attachment:3");
        assertThat(Sql.string(db, "SELECT string_agg(album_key, ',' ORDER BY album_key) FROM album"))
                .isEqualTo("late-open,open,person,unhandled,young");
        assertThat(Sql.count(db, "SELECT count(*) FROM album_decision WHERE album_key = 'old'")).isZero();
        assertThat(Sql.string(db, "SELECT string_agg(effect_key, ',' ORDER BY effect_key) FROM outbound_effect"))
                .isEqualTo("item-pending,never-confirmed,young");

        assertThat(retention.purge()).as("a second pass finds nothing").allMatch(o -> o.rows() == 0);
    }

    @Test
    void zeroDaysKeepsATableForever() throws Exception {
        seed();
        List<Retention.Outcome> purged = new Retention(db, days(0), 1000).purge();

        assertThat(purged).allMatch(o -> o.rows() == 0 && o.days() == 0);
        assertThat(Sql.count(db, "SELECT count(*) FROM telegram_update")).isEqualTo(OLD_DONE_UPDATES + 3);
    }

    @Test
    void theDepthMetricReadsOnlyUnfinishedWorkThroughItsPartialIndex() {
        Sql.execute(db, """
                INSERT INTO work_item (kind, source_key, source_id, state, done_at)
                SELECT 'telegram-update', 'k' || g, g, 'done', now() FROM generate_series(1, 50000) g;
                INSERT INTO work_item (kind, source_key, source_id) SELECT 'telegram-update', 'p' || g, g FROM generate_series(1, 5) g;
                ANALYZE work_item;""");

        assertThat(Sql.plan(db, WorkMetrics.DEPTH)).contains("work_item_unfinished").doesNotContain("Seq Scan");
    }
}
