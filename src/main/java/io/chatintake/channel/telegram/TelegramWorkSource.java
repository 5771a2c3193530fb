package io.chatintake.channel.telegram;

import io.chatintake.work.RowWorkSource;
import io.chatintake.work.WorkItem;
import io.chatintake.work.WorkQueue;
import java.sql.ResultSet;
import java.sql.SQLException;
import org.apache.camel.Message;

/**
 * Stored Telegram updates as work: handled by the {@code work:telegram-update} route. Updates are small
 * (a few KB): a run reads 25 per query.
 */
public final class TelegramWorkSource extends RowWorkSource {
    public static final String KIND = "telegram-update";

    private static final String SELECT = """
            SELECT u.id, u.bot_id, u.update_id, u.update_type, COALESCE(u.payload::text, u.raw_payload),
                   COALESCE(c.bot_name, u.bot_id::text), u.raw_reason
              FROM telegram_update u LEFT JOIN telegram_checkpoint c ON c.bot_id = u.bot_id
             WHERE u.id %s""";

    /**
     * The work of one stored update, keyed by its identity across id restarts
     * ({@code <bot id>:<update id>[:<generation>]}) and ordered within its chat, if it has one.
     */
    static WorkQueue.NewWork workFor(long botId, long rowId, long updateId, int generation, String chatId, String traceContext) {
        return new WorkQueue.NewWork(KIND, idempotencyKey(botId, updateId, generation), rowId, chatId == null ? null : botId + ":" + chatId,
                traceContext);
    }

    static String idempotencyKey(long botId, long updateId, int generation) {
        return botId + ":" + updateId + (generation == 0 ? "" : ":" + generation);
    }

    public TelegramWorkSource() {
        super(KIND, SELECT, 25);
    }

    @Override
    protected void fill(ResultSet rs, WorkItem item, Message message) throws SQLException {
        TelegramUpdateMessage.fill(message, rs.getString(6), rs.getLong(2), rs.getLong(3), rs.getString(4), item.sourceId(), rs.getString(5),
                rs.getString(7));
    }
}
