package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import io.chatintake.ops.StatusSnapshot.AlbumNeedingAPerson;
import io.chatintake.ops.StatusSnapshot.Bot;
import io.chatintake.ops.StatusSnapshot.EffectToSettle;
import io.chatintake.ops.StatusSnapshot.ParkedItem;
import io.chatintake.ops.StatusSnapshot.Process;
import io.chatintake.ops.StatusSnapshot.RecentAction;
import io.chatintake.ops.StatusSnapshot.WebhookChannel;
import io.chatintake.ops.StatusSnapshot.WorkCount;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@link StatusQueries} on a real PostgreSQL seeded with known rows: the snapshot's records hold
 * exactly those figures, the stored texts as stored (the view redacts them), and the long lists
 * one page at a time with their totals.
 */
@ExtendWith(TestDatabase.class)
class StatusQueriesTest {
    private static final Duration DEAD_AFTER = Duration.ofSeconds(30);
    private final StatusQueries queries = new StatusQueries(DEAD_AFTER, Duration.ofMinutes(10));

    @Test
    void anEmptyDatabaseReadsAsNothingWaitingAndNothingToSettle(DataSource db) throws SQLException {
        StatusSnapshot snapshot = read(db, 0, 0);

        assertThat(snapshot.work()).isEmpty();
        assertThat(snapshot.parked().total()).isZero();
        assertThat(snapshot.parked().rows()).isEmpty();
        assertThat(snapshot.effects().total()).isZero();
        assertThat(snapshot.effects().rows()).isEmpty();
        assertThat(snapshot.albums().open()).isZero();
        assertThat(snapshot.albums().oldestOpenSince()).isNull();
        assertThat(snapshot.albums().needingAPerson().rows()).isEmpty();
        assertThat(snapshot.attachments().unfinished()).isEmpty();
        assertThat(snapshot.attachments().receivedLastDay()).isEmpty();
        assertThat(snapshot.bots()).isEmpty();
        assertThat(snapshot.webhookChannels()).isEmpty();
        assertThat(snapshot.processes()).isEmpty();
        assertThat(snapshot.erasures()).isEmpty();
        assertThat(snapshot.actions()).isEmpty();
        assertThat(snapshot.pausedKinds()).isEmpty();
        assertThat(snapshot.pausedBots()).isEmpty();
        assertThat(snapshot.oldestTransaction()).isEmpty();
        Instant databaseNow = Instant.ofEpochMilli(Sql.count(db, "SELECT (extract(epoch FROM now()) * 1000)::bigint"));
        assertThat(Duration.between(snapshot.now(), databaseNow)).as("the database's clock").isBetween(Duration.ofMillis(-1), Duration.ofMinutes(1));
    }

    @Test
    void everySectionsFiguresAreReadIntoItsRecords(DataSource db) throws SQLException {
        Sql.execute(db, """
                INSERT INTO work_item (kind, source_key, source_id, state, next_attempt_at)
                SELECT 'telegram-update', 'tu:' || i, i, 'pending', now() - interval '10 minutes' + i * interval '1 second'
                  FROM generate_series(1, 3) i;
                INSERT INTO work_item (kind, source_key, source_id, state, next_attempt_at)
                VALUES ('telegram-update', 'later', 9, 'pending', now() + interval '1 hour');
                INSERT INTO work_item (kind, source_key, source_id, state, claimed_by) VALUES ('telegram-update', 'run', 10, 'running', 'p');
                INSERT INTO work_item (kind, source_key, source_id, state) VALUES ('telegram-update', 'done', 11, 'done');
                INSERT INTO work_item (kind, source_key, source_id, state, attempts, last_error)
                VALUES ('unifyport-event', 'up:1', 1, 'parked', 8, 'refused at https://media.example/f?sig=abc');
                INSERT INTO outbound_effect (effect_key, work_item_id, state, started_at, result)
                VALUES ('send:older', NULL, 'started', now() - interval '2 hours', 'timed out'),
                       ('send:newer', (SELECT id FROM work_item WHERE source_key = 'up:1'), 'started', now() - interval '1 hour', NULL),
                       ('send:running', (SELECT id FROM work_item WHERE source_key = 'run'), 'started', now(), NULL),
                       ('send:done', NULL, 'done', now(), 'ok');
                INSERT INTO operator_action (acted_by, action, target, outcome, state)
                VALUES ('alice', 'retry', 'work item 1', 'retried', NULL),
                       ('bob', 'act-on-many', 'parked', 'running', 'running');
                INSERT INTO erasure (erased_by, subject, key, counts) VALUES ('carol', 'telegram', '111:42', '{"channel_message": 2}');
                INSERT INTO album (album_key, workspace, provider, account_id, conversation_id, album_id, decided_version, decided_at,
                                   needs_person, first_child_at, last_child_at, decide_after)
                VALUES ('open', 'ws', 'p', 'acc', 'c', 'open', 0, NULL, false, now() - interval '5 minutes', now(), now()),
                       ('conflict', 'ws', 'p', 'acc', 'c', 'conflict', 3, now(), true, now(), now() - interval '1 minute', NULL);
                INSERT INTO channel_message (workspace, provider, account_id, conversation_id, message_id, first_event_id)
                VALUES ('ws', 'p', 'acc', 'c', 'm1', 'e1');
                INSERT INTO message_attachment (channel_message_id, position, source, status, created_at)
                SELECT (SELECT id FROM channel_message), i, 'url',
                       CASE WHEN i <= 2 THEN 'pending' WHEN i = 3 THEN 'failed' ELSE 'stored' END,
                       CASE WHEN i = 5 THEN now() - interval '2 days' ELSE now() END
                  FROM generate_series(1, 5) i;
                INSERT INTO telegram_checkpoint (bot_id, bot_name, next_offset, last_poll_at, last_batch_at, stored_count)
                VALUES (111, 'main', 5001, now() - interval '30 seconds', NULL, 4321), (222, 'sales', 7, NULL, NULL, 0);
                INSERT INTO telegram_poll_lease (bot_id, holder, fencing_token, expires_at)
                VALUES (111, 'host-a:1:x', 3, now() + interval '30 seconds');
                INSERT INTO telegram_loss_window (bot_id, from_time, to_time) VALUES (111, now() - interval '3 days', now() - interval '1 day');
                INSERT INTO telegram_gap (bot_id, from_update_id, to_update_id, detected_at)
                VALUES (111, 10, 12, now() - interval '1 hour'), (111, 4990, 4994, now());
                INSERT INTO webhook_event (workspace, channel, event_id, body, received_at, last_received_at, parse_error)
                VALUES ('ws-a', 'unifyport', 'e0', '\\x00', now(), now() - interval '2 hours', 'unmapped'),
                       ('ws-a', 'unifyport', 'e1', '\\x00', now(), now() - interval '90 seconds', NULL),
                       ('ws-b', 'slack', 'e2', '\\x00', now(), now() - interval '1 day', NULL);
                INSERT INTO runner_heartbeat (process_id, host, pid, beat_at, held_back_since)
                VALUES ('live', 'host-c', 44, now(), now() - interval '40 seconds'),
                       ('silent', 'host-d', 45, now() - interval '1 hour', NULL);
                INSERT INTO operator_pause (subject, name, paused_at, paused_by)
                VALUES ('telegram-bot', 'main', now(), 'alice'), ('work-kind', 'album-child', now(), 'bob');
                """);

        StatusSnapshot snapshot = read(db, 0, 0);
        Instant now = snapshot.now();

        assertThat(snapshot.work()).extracting(WorkCount::kind, WorkCount::state, WorkCount::items).containsExactly(
                tuple("telegram-update", "pending", 4L), tuple("telegram-update", "running", 1L), tuple("unifyport-event", "parked", 1L));
        assertThat(Duration.between(snapshot.work().get(0).oldestDue(), now)).as("the oldest due, not the one due later")
                .isBetween(Duration.ofMinutes(9), Duration.ofMinutes(11));
        assertThat(snapshot.work().get(1).oldestDue()).as("running: not due").isNull();

        assertThat(snapshot.parked().total()).isEqualTo(1);
        ParkedItem parked = snapshot.parked().rows().get(0);
        assertThat(parked.kind()).isEqualTo("unifyport-event");
        assertThat(parked.attempts()).isEqualTo(8);
        assertThat(parked.lastError()).as("as stored: the view redacts").isEqualTo("refused at https://media.example/f?sig=abc");

        assertThat(snapshot.effects().total()).as("neither done nor performed by a live run").isEqualTo(2);
        assertThat(snapshot.effects().rows()).extracting(EffectToSettle::key, EffectToSettle::workItemId, EffectToSettle::result)
                .containsExactly(tuple("send:older", null, "timed out"), tuple("send:newer", parked.id(), null));

        assertThat(snapshot.actions()).extracting(RecentAction::actedBy, RecentAction::action, RecentAction::cancellable)
                .as("newest first").containsExactly(tuple("bob", "act-on-many", true), tuple("alice", "retry", false));
        assertThat(snapshot.erasures()).singleElement().satisfies(e -> {
            assertThat(List.of(e.erasedBy(), e.subject(), e.key(), e.counts())).containsExactly("carol", "telegram", "111:42",
                    "{\"channel_message\": 2}");
            assertThat(e.erasedAt()).isNotNull();
        });

        assertThat(snapshot.albums().open()).isEqualTo(1);
        assertThat(Duration.between(snapshot.albums().oldestOpenSince(), now)).isBetween(Duration.ofMinutes(4), Duration.ofMinutes(6));
        assertThat(snapshot.albums().needingAPerson().total()).isEqualTo(1);
        assertThat(snapshot.albums().needingAPerson().rows()).extracting(AlbumNeedingAPerson::key, AlbumNeedingAPerson::decidedVersion)
                .containsExactly(tuple("conflict", 3));

        assertThat(snapshot.attachments().unfinished()).isEqualTo(Map.of("pending", 2L, "failed", 1L));
        assertThat(snapshot.attachments().receivedLastDay()).as("the one of two days ago left out")
                .isEqualTo(Map.of("pending", 2L, "failed", 1L, "stored", 1L));

        assertThat(snapshot.bots()).extracting(Bot::name).containsExactly("main", "sales");
        Bot main = snapshot.bots().get(0);
        assertThat(List.of(main.id(), main.nextOffset(), main.storedCount(), main.lossWindows(), main.gaps()))
                .containsExactly(111L, 5001L, 4321L, 1L, 2L);
        assertThat(main.leaseActive()).isTrue();
        assertThat(main.holder()).isEqualTo("host-a:1:x");
        assertThat(main.lastGap()).as("the newest gap").isEqualTo("4990..4994");
        assertThat(Duration.between(main.lastPoll(), now)).isBetween(Duration.ofSeconds(29), Duration.ofSeconds(40));
        assertThat(Duration.between(main.lastLossUntil(), now)).isBetween(Duration.ofHours(23), Duration.ofHours(25));
        assertThat(main.lastBatch()).isNull();
        Bot sales = snapshot.bots().get(1);
        assertThat(sales.leaseActive()).isFalse();
        assertThat(sales.holder()).isNull();
        assertThat(sales.lastGap()).isNull();

        assertThat(snapshot.webhookChannels()).extracting(WebhookChannel::channel, WebhookChannel::workspace, WebhookChannel::unmapped)
                .containsExactlyInAnyOrder(tuple("unifyport", "ws-a", 1L), tuple("slack", "ws-b", 0L));
        WebhookChannel unifyport = snapshot.webhookChannels().stream().filter(w -> w.channel().equals("unifyport")).findFirst().orElseThrow();
        assertThat(Duration.between(unifyport.lastDelivery(), now)).as("the newest delivery").isBetween(Duration.ofSeconds(89),
                Duration.ofSeconds(100));

        assertThat(snapshot.processes()).extracting(Process::id, Process::host, Process::pid, Process::dead)
                .as("the live first").containsExactly(tuple("live", "host-c", 44L, false), tuple("silent", "host-d", 45L, true));
        assertThat(Duration.between(snapshot.processes().get(0).heldBackSince(), now)).isBetween(Duration.ofSeconds(39),
                Duration.ofSeconds(50));
        assertThat(snapshot.processes().get(1).heldBackSince()).isNull();

        assertThat(snapshot.pausedBots()).containsOnlyKeys("main");
        assertThat(snapshot.pausedKinds()).containsOnlyKeys("album-child");
        assertThat(snapshot.pausedKinds().get("album-child").by()).isEqualTo("bob");
    }

    @Test
    void theLongListsAreReadOnePageAtATimeWithTheirTotals(DataSource db) throws SQLException {
        int many = StatusSnapshot.PAGE + 5;
        Sql.execute(db, """
                INSERT INTO work_item (kind, source_key, source_id, state, attempts)
                SELECT 'k', 'p:' || i, i, 'parked', 1 FROM generate_series(1, %1$d) i;
                INSERT INTO outbound_effect (effect_key, state, started_at)
                SELECT 'e' || lpad(i::text, 3, '0'), 'started', now() - interval '1 day' + i * interval '1 second'
                  FROM generate_series(1, %1$d) i;
                """.formatted(many));
        long newestParked = Sql.count(db, "SELECT max(id) FROM work_item");

        StatusSnapshot first = read(db, 0, 0);
        StatusSnapshot second = read(db, 1, 1);

        assertThat(first.parked().total()).isEqualTo(many);
        assertThat(first.parked().rows()).hasSize(StatusSnapshot.PAGE);
        assertThat(first.parked().rows().get(0).id()).as("newest first").isEqualTo(newestParked);
        assertThat(second.parked().page()).isEqualTo(1);
        assertThat(second.parked().rows()).hasSize(5);
        assertThat(second.parked().rows()).extracting(ParkedItem::id).doesNotContainAnyElementsOf(
                first.parked().rows().stream().map(ParkedItem::id).toList());
        assertThat(first.effects().total()).isEqualTo(many);
        assertThat(first.effects().rows()).extracting(EffectToSettle::key).as("oldest first").startsWith("e001", "e002")
                .hasSize(StatusSnapshot.PAGE);
        assertThat(second.effects().rows()).extracting(EffectToSettle::key).containsExactly("e021", "e022", "e023", "e024", "e025");
        assertThat(second.effects().total()).isEqualTo(many);
    }

    private StatusSnapshot read(DataSource db, int parkedPage, int effectsPage) throws SQLException {
        try (Connection c = db.getConnection()) {
            return queries.read(c, parkedPage, effectsPage);
        }
    }

}
