package io.chatintake.channel.telegram;

import static io.chatintake.channel.telegram.TelegramIntake.count;
import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.channel.ChildMessages;
import io.chatintake.testkit.CachedPlan;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.work.WorkQueue;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Stored updates becoming work behind the poller, from storage. */
@ExtendWith(TestDatabase.class)
class ScheduleCheckpointTest {
    private static final Duration LEASE = Duration.ofSeconds(30);

    @Test
    void storedUpdatesBecomeWorkOnlyWhenScheduledAndInTheirOrderPerChat(DataSource dataSource) throws Exception {
        PollLease.Held lease = TelegramUpdateStoreTest.leaseAndCheckpoint(dataSource, 21);
        TelegramUpdateStore inbox = new TelegramUpdateStore(dataSource, ChildMessages.listener());
        TelegramUpdateStore.StoredBatch first = inbox.store(lease, LEASE, List.of(message(1, 7), message(2, 8), message(3, 7)));
        TelegramUpdateStore.StoredBatch second = inbox.store(lease, LEASE, List.of(message(4, 7)));
        assertThat(count("SELECT count(*) FROM work_item WHERE kind = 'telegram-update'")).as("storing confirms, it does not schedule").isZero();

        ScheduleCheckpoint schedule = new ScheduleCheckpoint(dataSource);
        assertThat(schedule.unscheduled(21)).isEqualTo(4);
        assertThat(schedule.scheduleThrough(21, first.lastRowId())).isEqualTo(first.lastRowId());
        assertThat(schedule.unscheduled(21)).isEqualTo(1);
        assertThat(count("SELECT count(*) FROM work_item WHERE kind = 'telegram-update'")).isEqualTo(3);
        assertThat(schedule.scheduleThrough(21, second.lastRowId())).isEqualTo(second.lastRowId());
        // Scheduling again, or from an older bound (a slower process), schedules nothing and never moves the mark back.
        assertThat(schedule.scheduleThrough(21, first.lastRowId())).isEqualTo(second.lastRowId());
        schedule.scheduleThrough(21, second.lastRowId());

        assertThat(Sql.string(dataSource, """
                SELECT string_agg(source_key || '@' || chat_key, ' ' ORDER BY id) FROM work_item WHERE kind = 'telegram-update'"""))
                .isEqualTo("21:1@21:7 21:2@21:8 21:3@21:7 21:4@21:7");
        assertThat(schedule.unscheduled(21)).isZero();
        assertThat(count("SELECT scheduled_through FROM telegram_schedule_checkpoint WHERE bot_id = 21")).isEqualTo(second.lastRowId());
    }

    @Test
    void aBacklogLeftByACrashIsScheduledInChunksUpToTheInboxsLastRow(DataSource dataSource) throws Exception {
        PollLease.Held lease = TelegramUpdateStoreTest.leaseAndCheckpoint(dataSource, 22);
        TelegramUpdateStore inbox = new TelegramUpdateStore(dataSource, ChildMessages.listener());
        int updates = ScheduleCheckpoint.CHUNK * 2 + 10;
        for (int from = 1; from <= updates; from += 100) {
            List<BotApiClient.RawUpdate> batch = new ArrayList<>();
            for (int id = from; id < from + 100 && id <= updates; id++) {
                batch.add(message(id, id % 3));
            }
            inbox.store(lease, LEASE, batch);
        }
        // Another bot's rows among them are not this bot's work.
        inbox.store(TelegramUpdateStoreTest.leaseAndCheckpoint(dataSource, 23), LEASE, List.of(message(1, 1)));

        ScheduleCheckpoint schedule = new ScheduleCheckpoint(dataSource);
        long last = schedule.lastStoredRow(lease).orElseThrow();
        assertThat(schedule.scheduleThrough(22, last)).isEqualTo(last);

        assertThat(count("SELECT count(*) FROM work_item WHERE kind = 'telegram-update' AND source_key LIKE '22:%'")).isEqualTo(updates);
        assertThat(count("SELECT count(*) FROM work_item WHERE kind = 'telegram-update' AND source_key LIKE '23:%'")).isZero();
        assertThat(count("""
                SELECT count(*) FROM (SELECT source_id, lag(source_id) OVER (PARTITION BY chat_key ORDER BY id) AS before
                                        FROM work_item WHERE kind = 'telegram-update') w WHERE w.before > w.source_id"""))
                .as("items out of their updates' order within a chat").isZero();
    }

    @Test
    void whatThePollerHandsOverIsScheduledAsHandedOverAndOnlyEarlierRowsAreRead(DataSource dataSource) throws Exception {
        PollLease.Held lease = TelegramUpdateStoreTest.leaseAndCheckpoint(dataSource, 26);
        TelegramUpdateStore inbox = new TelegramUpdateStore(dataSource, ChildMessages.listener());
        // An earlier holder stored these and stopped before scheduling them.
        inbox.store(lease, LEASE, List.of(message(1, 7), message(2, 8)));
        ScheduleCheckpoint schedule = new ScheduleCheckpoint(dataSource);
        long above = schedule.lastStoredRow(lease).orElseThrow();
        TelegramUpdateStore.StoredBatch first = inbox.store(lease, LEASE, List.of(message(3, 7)));
        inbox.store(TelegramUpdateStoreTest.leaseAndCheckpoint(dataSource, 27), LEASE, List.of(message(1, 1)));
        TelegramUpdateStore.StoredBatch second = inbox.store(lease, LEASE, List.of(message(4, 8), message(5, 7)));
        // Read back from storage now, update 5 would be in chat 9: the handed-over rows are not read back.
        Sql.execute(dataSource, """
                UPDATE telegram_update SET payload = jsonb_set(payload, '{message,chat,id}', '9') WHERE bot_id = 26 AND update_id = 5""");
        List<WorkQueue.NewWork> handedOver = new ArrayList<>(first.work(26));
        handedOver.addAll(second.work(26));

        assertThat(schedule.scheduleThrough(26, second.lastRowId(), new ScheduleCheckpoint.Stored(above, handedOver)))
                .isEqualTo(second.lastRowId());

        assertThat(Sql.string(dataSource, """
                SELECT string_agg(source_key || '@' || chat_key, ' ' ORDER BY id) FROM work_item WHERE kind = 'telegram-update'"""))
                .isEqualTo("26:1@26:7 26:2@26:8 26:3@26:7 26:4@26:8 26:5@26:7");
        assertThat(schedule.unscheduled(26)).isZero();
    }

    @Test
    void aLeaseThatChangedHandsGivesNoBound(DataSource dataSource) throws Exception {
        PollLease leases = new PollLease(dataSource);
        PollLease.Held stale = TelegramUpdateStoreTest.leaseAndCheckpoint(dataSource, 25);
        leases.release(stale);
        PollLease.Held current = leases.tryAcquire(25, "newcomer", LEASE).orElseThrow();

        ScheduleCheckpoint schedule = new ScheduleCheckpoint(dataSource);
        // The newcomer may be storing a batch at this moment: only it knows what is committed.
        assertThat(schedule.lastStoredRow(stale)).isEmpty();
        assertThat(schedule.lastStoredRow(current)).isPresent();
    }

    @Test
    void anUpdateStoredRawKeepsItsChat(DataSource dataSource) throws Exception {
        PollLease.Held lease = TelegramUpdateStoreTest.leaseAndCheckpoint(dataSource, 24);
        TelegramUpdateStore.StoredBatch stored = new TelegramUpdateStore(dataSource, ChildMessages.listener()).store(lease, LEASE,
                List.of(new BotApiClient.RawUpdate(1, "message", "{\"update_id\":1,\"message\":{\"chat\":{\"id\":9},\"text\":\"nul \\u0000 here\"}}")));
        assertThat(stored.stored()).singleElement().extracting(TelegramUpdateStore.StoredUpdate::rawReason).isNotNull();

        new ScheduleCheckpoint(dataSource).scheduleThrough(24, stored.lastRowId());

        assertThat(Sql.string(dataSource, "SELECT chat_key FROM work_item WHERE source_key = '24:1'")).isEqualTo("24:9");
    }

    @Test
    void schedulingReadsOnlyTheRangeWhenItsPlanWasCachedWhileTheInboxWasSmall(DataSource dataSource) throws Exception {
        String update = "'{\"update_id\":' || g || ',\"message\":{\"chat\":{\"id\":5},\"text\":\"hi\"}}'";
        try (Connection c = dataSource.getConnection()) {
            CachedPlan.Explained after = CachedPlan.afterGrowth(c, List.of("telegram_update"),
                    "INSERT INTO telegram_update (id, bot_id, update_id, update_type, payload)"
                            + " SELECT g, 1, g, 'message', (" + update + ")::jsonb FROM generate_series(1, 10) g",
                    ScheduleCheckpoint.AFTER, List.of("bigint", "bigint", "bigint", "int"), "8, 10, 1, 1000",
                    "INSERT INTO telegram_update (id, bot_id, update_id, update_type, payload)"
                            + " SELECT g, 1, g, 'message', (" + update + ")::jsonb FROM generate_series(11, 50000) g",
                    "49998, 50000, 1, 1000");
            // Two rows and their index entries; reading the bot's 50,000 stored updates takes thousands of blocks.
            assertThat(after.blocks()).as(after.plan()).isLessThan(50);
        }
    }

    private static BotApiClient.RawUpdate message(long id, long chat) {
        return new BotApiClient.RawUpdate(id, "message", "{\"update_id\":" + id + ",\"message\":{\"chat\":{\"id\":" + chat + "},\"text\":\"m\"}}");
    }
}
