package io.chatintake.work;

import java.sql.Connection;
import java.sql.SQLException;
import org.apache.camel.Message;

/**
 * A kind of stored item (Telegram update, webhook event, album decision): where its handler route
 * is and how to turn its stored row back into the message that route receives.
 */
public interface WorkSource {
    String kind();

    /** The handler route, e.g. {@code direct:telegram-update}. */
    String endpointUri();

    /** Fills body and headers from the item's row; the common work headers are set by the dispatcher. */
    void load(Connection connection, WorkItem item, Message message) throws SQLException;
}
