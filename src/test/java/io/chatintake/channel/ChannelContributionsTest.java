package io.chatintake.channel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.entry;
import static org.assertj.core.api.Assertions.tuple;

import io.chatintake.album.AlbumKey;
import io.chatintake.album.QuietPeriods;
import io.chatintake.channel.telegram.TelegramChannel;
import io.chatintake.channel.webhook.WebhookChannel;
import io.chatintake.config.Settings;
import io.chatintake.content.ContentRemoval;
import io.chatintake.message.ChildMessageListener.StoredChild;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.work.RetainedTable;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** What the channels contribute to the layers below them, registered in META-INF/services and applied there. */
@ExtendWith(TestDatabase.class)
class ChannelContributionsTest {
    private final DataSource db = TestDatabase.dataSource();

    @Test
    void telegramAlbumsGetTheirOwnQuietPeriodAndOtherProvidersTheCommonOne() throws Exception {
        QuietPeriods periods = QuietPeriods.from(Settings.of(Map.of(
                "albums.quiet-period-seconds", "20", "albums.telegram-quiet-period-seconds", "5")));
        assertThat(periods.byProvider()).containsExactly(entry(TelegramChannel.PROVIDER, Duration.ofSeconds(5)));

        try (Connection c = db.getConnection()) {
            c.setAutoCommit(false);
            List<StoredChild> children = new ArrayList<>();
            for (String provider : List.of(TelegramChannel.PROVIDER, "unifyport")) {
                try (PreparedStatement ps = c.prepareStatement("""
                        INSERT INTO channel_message (workspace, provider, account_id, conversation_id, message_id, album_id, first_event_id)
                        VALUES ('default', ?, 'acc', 'conv', 'm1', 'a1', 'e1') RETURNING id""")) {
                    ps.setString(1, provider);
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        children.add(new StoredChild(rs.getLong(1), true, true, false, null));
                    }
                }
            }
            AlbumKey.scheduler(periods).stored(c, children);
            c.commit();
        }

        assertThat(Sql.string(db, "SELECT string_agg(provider || '=' || extract(epoch FROM decide_after - first_child_at)::int, ','"
                + " ORDER BY provider) FROM album")).isEqualTo("telegram-bot=5,unifyport=20");
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'album-child'")).isEqualTo(2);
    }

    @Test
    void erasedContentOfEachChannelsRowsIsGoneForTheWorkThatReadsThem() throws Exception {
        Sql.execute(db, """
                INSERT INTO telegram_update (bot_id, update_id, update_type, payload) VALUES (1, 1, 'message', '{}'), (1, 2, 'message', '{}');
                INSERT INTO webhook_event (workspace, channel, event_id, body) VALUES ('default', 'slack', 'e1', '\\x7b7d'), ('default', 'slack', 'e2', '\\x7b7d');
                INSERT INTO work_item (kind, source_key, source_id) SELECT 'telegram-update', 'u' || update_id, id FROM telegram_update;
                INSERT INTO work_item (kind, source_key, source_id) SELECT 'slack-event', 'e' || event_id, id FROM webhook_event;""");
        try (Connection c = db.getConnection()) {
            c.setAutoCommit(false);
            ContentRemoval removal = new ContentRemoval(c, null, true);
            assertThat(removal.rows(TelegramChannel.CONTENT, List.of(Sql.count(db, "SELECT id FROM telegram_update WHERE update_id = 1"))))
                    .isEqualTo(1);
            assertThat(removal.rows(WebhookChannel.CONTENT, List.of(Sql.count(db, "SELECT id FROM webhook_event WHERE event_id = 'e1'"))))
                    .isEqualTo(1);
            c.commit();
        }

        List<String> gone = new ArrayList<>();
        try (Connection c = db.getConnection()) {
            for (long item : Sql.rows(db, "SELECT id FROM work_item ORDER BY source_key").stream().map(r -> ((Number) r.get(0)).longValue()).toList()) {
                gone.add(Sql.string(db, "SELECT source_key FROM work_item WHERE id = " + item) + "=" + ContentRemoval.goneFor(c, item));
            }
        }
        assertThat(gone).containsExactly("ee1=true", "ee2=false", "u1=true", "u2=false");
    }

    @Test
    void retentionPurgesTheChannelsSourcesWithTheirWorkAndTheKeptKeysAsPlainRows() {
        assertThat(RetainedTable.registered()).extracting(RetainedTable::table, RetainedTable::workKind).containsExactly(
                tuple("telegram_update", "telegram-update"),
                tuple("webhook_event", "unifyport-event"),
                tuple("webhook_event_purged", null));
    }
}
