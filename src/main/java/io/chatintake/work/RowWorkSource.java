package io.chatintake.work;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import org.apache.camel.Exchange;
import org.apache.camel.Message;

/**
 * A kind whose items are rows of one table read by one query: {@code select} ends with the row
 * id's condition ({@code %s}) and its first column is the row id. A run reads
 * {@code loadTogether} rows per query; {@link #fill} turns a row into the handler's message.
 */
public abstract class RowWorkSource extends WorkSource {
    private final String select;
    private final int loadTogether;

    protected RowWorkSource(String kind, String select, int loadTogether) {
        super(kind);
        this.select = select;
        this.loadTogether = loadTogether;
    }

    /** Sets the message's body and headers from the item's row. */
    protected abstract void fill(ResultSet row, WorkItem item, Message message) throws SQLException;

    @Override
    public final void load(Connection connection, WorkItem item, Message message) throws SQLException {
        readRow(connection, select.formatted("= ?"), item, rs -> fill(rs, item, message));
    }

    @Override
    public final int loadTogether() {
        return loadTogether;
    }

    @Override
    public final void loadRun(Connection connection, List<WorkItem> items, List<Exchange> exchanges) {
        readRows(connection, select.formatted("= ANY (?::bigint[])"), items, exchanges, this::fill);
    }
}
