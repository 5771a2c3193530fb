package io.chatintake.channel.telegram;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.channel.ChildMessages;
import io.chatintake.content.ContentRemoval;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The searchable copy of the updates' text: written with their work, not with the batch, and gone with their content. */
@ExtendWith(TestDatabase.class)
class UpdateTextTest {
    private static final Duration LEASE = Duration.ofSeconds(30);

    @Test
    void textBecomesSearchableWhenScheduledAndGoesWithItsContent(DataSource db) throws Exception {
        PollLease.Held lease = TelegramUpdateStoreTest.leaseAndCheckpoint(db, 31);
        TelegramUpdateStore inbox = new TelegramUpdateStore(db, ChildMessages.listener());
        TelegramUpdateStore.StoredBatch batch = inbox.store(lease, LEASE, List.of(
                update(1, "{\"text\":\"where is my parcel-31\"}"),
                update(2, "{\"caption\":\"photo of the parcel-31\",\"photo\":[{\"file_id\":\"f\"}]}"),
                update(3, "{\"sticker\":{\"file_id\":\"s\"}}")));
        assertThat(Sql.count(db, "SELECT count(*) FROM telegram_update_text")).as("the batch's commit writes only the raw rows").isZero();

        ScheduleCheckpoint schedule = new ScheduleCheckpoint(db);
        schedule.scheduleThrough(31, batch.lastRowId());
        assertThat(Sql.rows(db, "SELECT u.update_id, t.text FROM telegram_update_text t JOIN telegram_update u ON u.id = t.update_row_id"
                + " ORDER BY u.update_id")).containsExactly(List.of(1L, "where is my parcel-31"), List.of(2L, "photo of the parcel-31"));
        schedule.scheduleThrough(31, batch.lastRowId());
        assertThat(Sql.count(db, "SELECT count(*) FROM telegram_update_text")).as("scheduled again: nothing copied twice").isEqualTo(2);

        long first = Sql.count(db, "SELECT id FROM telegram_update WHERE bot_id = 31 AND update_id = 1");
        try (Connection c = db.getConnection()) {
            new ContentRemoval(c, null, false).rows(TelegramChannel.CONTENT, List.of(first));
        }
        assertThat(Sql.count(db, "SELECT count(*) FROM telegram_update_text WHERE text LIKE 'where is my%'")).as("its content removed").isZero();

        Sql.execute(db, "DELETE FROM telegram_update WHERE bot_id = 31");
        assertThat(Sql.count(db, "SELECT count(*) FROM telegram_update_text")).as("its row purged").isZero();
    }

    private static BotApiClient.RawUpdate update(long id, String content) {
        String message = content.substring(0, content.length() - 1) + ",\"message_id\":" + id + ",\"chat\":{\"id\":77}}";
        return new BotApiClient.RawUpdate(id, "message", "{\"update_id\":" + id + ",\"message\":" + message + "}");
    }
}
