package io.chatintake.work;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import org.apache.camel.Message;

/**
 * A kind of stored item (Telegram update, webhook event, album child or decision, attachment):
 * where its handler route is and how to turn its stored row back into the message that route
 * receives. The common work headers are set by the dispatcher.
 */
public abstract class WorkSource {
    private final String kind;
    private final String endpointUri;

    protected WorkSource(String kind, String endpointUri) {
        this.kind = kind;
        this.endpointUri = endpointUri;
    }

    public final String kind() {
        return kind;
    }

    /** The handler route, e.g. {@code direct:telegram-update}. */
    public final String endpointUri() {
        return endpointUri;
    }

    /** Fills body and headers from the item's row. */
    public abstract void load(Connection connection, WorkItem item, Message message) throws SQLException;

    @FunctionalInterface
    protected interface RowReader {
        void read(ResultSet row) throws SQLException;
    }

    /** Reads the item's source row with {@code sql}, whose one parameter is the row id; a missing row is an error. */
    protected static void readRow(Connection connection, String sql, WorkItem item, RowReader reader) throws SQLException {
        try (PreparedStatement ps = connection.prepareStatement(sql)) {
            ps.setLong(1, item.sourceId());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new SQLException("the " + item.kind() + " row " + item.sourceId() + " of work item " + item.id() + " is missing");
                }
                reader.read(rs);
            }
        }
    }
}
