package io.chatintake.channel.telegram;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.channel.ChildMessages;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** A polled batch commits its rows only; scheduling derives the album children, their attachment rows and albums, once. */
@ExtendWith(TestDatabase.class)
class MediaGroupDerivationTest {
    private static final Duration LEASE = Duration.ofSeconds(30);

    @Test
    void aPolledBatchCommitsOnlyItsRowsAndSchedulingDerivesItsChildrenOnce(DataSource dataSource) throws Exception {
        PollLease.Held lease = TelegramUpdateStoreTest.leaseAndCheckpoint(dataSource, 61);
        TelegramUpdateStore inbox = new TelegramUpdateStore(dataSource, ChildMessages.listener());
        TelegramUpdateStore.StoredBatch batch = inbox.store(lease, LEASE, List.of(part(1, "f1"), text(2), part(3, "f2")));
        assertThat(derived(61)).as("nothing derived before scheduling").isEqualTo("0 children, 0 attachments, 0 albums, 0 album-child items");
        // Received again before it was derived: a duplicate, stored once.
        TelegramUpdateStore.StoredBatch again = inbox.store(lease, LEASE, List.of(part(1, "f1"), part(3, "f2")));
        assertThat(again.stored()).isEmpty();
        assertThat(again.duplicates()).isEqualTo(2);
        assertThat(batch.mediaGroupParts()).containsExactlyInAnyOrder(batch.stored().get(0).rowId(), batch.stored().get(2).rowId());

        ScheduleCheckpoint schedule = new ScheduleCheckpoint(dataSource, ChildMessages.listener());
        long above = batch.stored().get(0).rowId() - 1;
        schedule.scheduleThrough(61, batch.lastRowId(), new ScheduleCheckpoint.Stored(above, batch.work(61), batch.mediaGroupParts()));

        assertThat(derived(61)).isEqualTo("2 children, 2 attachments, 1 albums, 2 album-child items");
        assertThat(Sql.string(dataSource, "SELECT string_agg(first_event_id || '/' || album_id || '/' || (attachments -> 0 ->> 'telegram_file_id'),"
                + " ' ' ORDER BY id) FROM channel_message WHERE account_id = '61'")).isEqualTo("telegram:61:1/g1/f1 telegram:61:3/g1/f2");
        assertThat(Sql.count(dataSource, "SELECT count(*) FROM work_item WHERE kind = 'telegram-update' AND source_key LIKE '61:%'")).isEqualTo(3);

        // Derived again from storage (as after a commit whose mark was lost): nothing is added, no listener told twice.
        Sql.execute(dataSource, "UPDATE telegram_schedule_checkpoint SET scheduled_through = 0 WHERE bot_id = 61");
        schedule.scheduleThrough(61, batch.lastRowId());
        assertThat(derived(61)).isEqualTo("2 children, 2 attachments, 1 albums, 2 album-child items");
        assertThat(Sql.count(dataSource, "SELECT count(*) FROM work_item WHERE kind = 'telegram-update' AND source_key LIKE '61:%'")).isEqualTo(3);
    }

    @Test
    void rowsLeftUnscheduledAreDerivedFromStorageByWhoeverSchedulesNext(DataSource dataSource) throws Exception {
        PollLease.Held lease = TelegramUpdateStoreTest.leaseAndCheckpoint(dataSource, 62);
        TelegramUpdateStore.StoredBatch batch = new TelegramUpdateStore(dataSource, ChildMessages.listener())
                .store(lease, LEASE, List.of(text(1), part(2, "f9")));

        ScheduleCheckpoint next = new ScheduleCheckpoint(dataSource, ChildMessages.listener());
        next.scheduleThrough(62, next.lastStoredRow(lease).orElseThrow());

        assertThat(batch.stored()).hasSize(2);
        assertThat(derived(62)).isEqualTo("1 children, 1 attachments, 1 albums, 1 album-child items");
        assertThat(next.unscheduled(62)).isZero();
    }

    @Test
    void aPushedPartIsDerivedInItsOwnTransaction(DataSource dataSource) throws Exception {
        TelegramUpdateStore inbox = new TelegramUpdateStore(dataSource, ChildMessages.listener());
        assertThat(inbox.storePushed(63, part(1, "f5"))).hasSize(1);
        assertThat(inbox.storePushed(63, part(1, "f5"))).as("a redelivered push").isEmpty();

        assertThat(derived(63)).isEqualTo("1 children, 1 attachments, 1 albums, 1 album-child items");
    }

    private static String derived(long botId) {
        return TelegramIntake.count("SELECT count(*) FROM channel_message WHERE account_id = '" + botId + "'") + " children, "
                + TelegramIntake.count("SELECT count(*) FROM message_attachment WHERE telegram_bot_id = " + botId) + " attachments, "
                + TelegramIntake.count("SELECT count(*) FROM album WHERE account_id = '" + botId + "'") + " albums, "
                + TelegramIntake.count("SELECT count(*) FROM work_item w JOIN channel_message m ON m.id = w.source_id"
                + " WHERE w.kind = 'album-child' AND m.account_id = '" + botId + "'") + " album-child items";
    }

    private static BotApiClient.RawUpdate part(long id, String file) {
        return new BotApiClient.RawUpdate(id, "message", "{\"update_id\":" + id + ",\"message\":{\"message_id\":" + id
                + ",\"date\":1700000000,\"chat\":{\"id\":7},\"media_group_id\":\"g1\",\"photo\":[{\"file_id\":\"" + file
                + "\",\"file_unique_id\":\"u" + file + "\"}]}}");
    }

    private static BotApiClient.RawUpdate text(long id) {
        return new BotApiClient.RawUpdate(id, "message", "{\"update_id\":" + id + ",\"message\":{\"message_id\":" + id
                + ",\"date\":1700000000,\"chat\":{\"id\":7},\"text\":\"hi\"}}");
    }
}
