package io.chatintake.channel.telegram;

import io.chatintake.album.QuietPeriod;
import io.chatintake.content.ExpiringContent;
import io.chatintake.work.RetainedTable;
import java.util.List;

/**
 * What the Telegram channel tells the layers below it, which never name it: the table retention
 * purges, the content that expires, and the quiet period of its albums. Registered in {@code META-INF/services}.
 * <p>
 * Update ids are not kept after their rows go: Telegram reuses them after a week idle (a new
 * update, told apart only by its content) and stops retrying a webhook long before retention
 * deletes an update.
 */
public final class TelegramChannel implements RetainedTable.Contributor, ExpiringContent.Contributor, QuietPeriod.Contributor {
    /** The provider of the children it stores in {@code channel_message}. */
    public static final String PROVIDER = "telegram-bot";
    /** Its updates' raw content, removed by content expiry and erasure while the row stays. */
    public static final ExpiringContent CONTENT = new ExpiringContent("telegram_update", "received_at", TelegramWorkSource.KIND,
            "payload = NULL, raw_payload = NULL, raw_reason = NULL", "payload IS NOT NULL OR raw_payload IS NOT NULL", null);

    @Override
    public List<RetainedTable> retainedTables() {
        return List.of(RetainedTable.workSource("telegram_update", "received_at", "retention.telegram-update-days", TelegramWorkSource.KIND));
    }

    @Override
    public List<ExpiringContent> expiringContent() {
        return List.of(CONTENT);
    }

    /** Its albums never carry a total, so only their own, shorter quiet period closes them. */
    @Override
    public List<QuietPeriod> quietPeriods() {
        return List.of(new QuietPeriod(PROVIDER, "albums.telegram-quiet-period-seconds"));
    }
}
