package io.chatintake.channel.webhook;

import java.sql.SQLException;
import java.util.List;

/**
 * Where a channel's verified events are stored. {@link WebhookEventStore} (table
 * {@code webhook_event}) unless the route names another, e.g. the Telegram webhook's, which
 * stores into {@code telegram_update} like polling does.
 */
@FunctionalInterface
public interface WebhookEventSink {
    /** Whether an event was stored by this delivery or found stored already. */
    record Stored(long id, boolean firstDelivery) {
    }

    /**
     * Stores every event of one verified delivery in ONE transaction, as a durable job for
     * everything they imply (child messages, album scheduling, work items: written with them, or
     * derived from them right after, as {@link WebhookEventStore} does). Returning means committed: only then
     * may the caller answer 2xx. A failure means nothing of the delivery was committed.
     */
    List<Stored> store(Delivery delivery, List<WebhookEvent> events) throws SQLException;
}
