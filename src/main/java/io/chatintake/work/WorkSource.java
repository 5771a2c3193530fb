package io.chatintake.work;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.camel.Exchange;
import org.apache.camel.Message;

/**
 * A kind of stored item (Telegram update, webhook event, album child or decision, attachment):
 * how to turn its stored row back into the message its {@code work:<kind>} route receives. The
 * common work headers are set by the dispatcher.
 */
public abstract class WorkSource {
    private final String kind;

    protected WorkSource(String kind) {
        this.kind = kind;
    }

    public final String kind() {
        return kind;
    }

    /** Fills body and headers from the item's row. */
    public abstract void load(Connection connection, WorkItem item, Message message) throws SQLException;

    /**
     * How many items of a run the dispatcher loads at once ({@link #loadRun}). 1 unless the kind
     * reads rows together; keep it small where rows can be large (they are all in memory then).
     */
    public int loadTogether() {
        return 1;
    }

    /**
     * Fills the messages of some of a run's items (same positions) from their rows. One query per
     * item, unless the kind reads them together ({@link #readRows}); an item whose row cannot be
     * read gets the failure as its exchange's exception, the others go on.
     */
    public void loadRun(Connection connection, List<WorkItem> items, List<Exchange> exchanges) {
        for (int i = 0; i < items.size(); i++) {
            try {
                load(connection, items.get(i), exchanges.get(i).getMessage());
            } catch (SQLException e) {
                exchanges.get(i).setException(e);
            }
        }
    }

    @FunctionalInterface
    protected interface RowReader {
        void read(ResultSet row) throws SQLException;
    }

    @FunctionalInterface
    protected interface RunRowReader {
        void read(ResultSet row, WorkItem item, Message message) throws SQLException;
    }

    /**
     * Reads the source rows of a run's items in one query: {@code sql}'s one parameter is the
     * array of row ids, its first column the row id. A missing row is that item's error.
     */
    protected static void readRows(Connection connection, String sql, List<WorkItem> items, List<Exchange> exchanges,
                                   RunRowReader reader) {
        Map<Long, Integer> positions = new HashMap<>();
        for (int i = 0; i < items.size(); i++) {
            positions.put(items.get(i).sourceId(), i);
        }
        try (PreparedStatement ps = connection.prepareStatement(sql)) {
            ps.setArray(1, connection.createArrayOf("bigint", positions.keySet().toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    Integer i = positions.remove(rs.getLong(1));
                    if (i != null) {
                        reader.read(rs, items.get(i), exchanges.get(i).getMessage());
                    }
                }
            }
        } catch (SQLException e) {
            exchanges.forEach(exchange -> exchange.setException(e));
            return;
        }
        positions.values().forEach(i -> exchanges.get(i).setException(missing(items.get(i))));
    }

    private static SQLException missing(WorkItem item) {
        return new SQLException("the " + item.kind() + " row " + item.sourceId() + " of work item " + item.id() + " is missing");
    }

    /** Reads the item's source row with {@code sql}, whose one parameter is the row id; a missing row is an error. */
    protected static void readRow(Connection connection, String sql, WorkItem item, RowReader reader) throws SQLException {
        try (PreparedStatement ps = connection.prepareStatement(sql)) {
            ps.setLong(1, item.sourceId());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw missing(item);
                }
                reader.read(rs);
            }
        }
    }
}
