package io.chatintake.channel.webhook;

import io.chatintake.message.ChildMessageListener;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;

/**
 * For tests about what a stored delivery leads to (children, albums, attachments, work items):
 * the product's event store, then its deriver at once, as the runner's scheduler does right after
 * the commit.
 */
public final class DerivingEventStore {
    private final WebhookEventStore store;
    private final WebhookEventDeriver deriver;

    public DerivingEventStore(DataSource db, String workspace, ChildMessageListener children) {
        this.store = new WebhookEventStore(db, Duration.ofSeconds(5), workspace, "unifyport", "unifyport-event", () -> { });
        this.deriver = new WebhookEventDeriver(db, children);
    }

    /** Stores the delivery's events, then derives whatever is underived. */
    public List<WebhookEventSink.Stored> store(List<WebhookEvent> events) throws SQLException {
        List<WebhookEventSink.Stored> stored = store.store(events);
        deriveAll();
        return stored;
    }

    public void deriveAll() throws SQLException {
        while (deriver.deriveNext(1000) > 0) {
            // until a pass finds nothing
        }
    }
}
