package io.chatintake.channel.telegram;

import io.chatintake.work.WorkItem;
import io.chatintake.work.WorkSource;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import org.apache.camel.Exchange;
import org.apache.camel.Message;

/** Stored Telegram updates as work: handled by {@code direct:telegram-update}. */
public final class TelegramWorkSource extends WorkSource {
    public static final String KIND = "telegram-update";

    public TelegramWorkSource(String endpointUri) {
        super(KIND, endpointUri);
    }

    private static final String SELECT = """
            SELECT u.id, u.bot_id, u.update_id, u.update_type, COALESCE(u.payload::text, u.raw_payload),
                   COALESCE(c.bot_name, u.bot_id::text), u.raw_reason
              FROM telegram_update u LEFT JOIN telegram_checkpoint c ON c.bot_id = u.bot_id
             WHERE u.id %s""";

    @Override
    public void load(Connection connection, WorkItem item, Message message) throws SQLException {
        readRow(connection, SELECT.formatted("= ?"), item, rs -> fill(rs, item, message));
    }

    /** Updates are small (a few KB): a busy chat's run reads 100 of them per query. */
    @Override
    public int loadTogether() {
        return 100;
    }

    @Override
    public void loadRun(Connection connection, List<WorkItem> items, List<Exchange> exchanges) {
        readRows(connection, SELECT.formatted("= ANY (?::bigint[])"), items, exchanges, TelegramWorkSource::fill);
    }

    private static void fill(ResultSet rs, WorkItem item, Message message) throws SQLException {
        TelegramUpdateMessage.fill(message, rs.getString(6), rs.getLong(2), rs.getLong(3), rs.getString(4), item.sourceId(), rs.getString(5),
                rs.getString(7));
    }
}
