package io.chatintake.channel.telegram;

import io.chatintake.work.WorkItem;
import io.chatintake.work.WorkSource;
import java.sql.Connection;
import java.sql.SQLException;
import org.apache.camel.Message;

/** Stored Telegram updates as work: handled by {@code direct:telegram-update}. */
public final class TelegramWorkSource extends WorkSource {
    public static final String KIND = "telegram-update";

    public TelegramWorkSource(String endpointUri) {
        super(KIND, endpointUri);
    }

    @Override
    public void load(Connection connection, WorkItem item, Message message) throws SQLException {
        readRow(connection, """
                SELECT u.bot_id, u.update_id, u.update_type, COALESCE(u.payload::text, u.raw_payload),
                       COALESCE(c.bot_name, u.bot_id::text), u.raw_reason
                  FROM telegram_update u LEFT JOIN telegram_checkpoint c ON c.bot_id = u.bot_id
                 WHERE u.id = ?""", item, rs -> TelegramUpdateMessage.fill(message, rs.getString(5), rs.getLong(1),
                rs.getLong(2), rs.getString(3), item.sourceId(), rs.getString(4), rs.getString(6)));
    }
}
