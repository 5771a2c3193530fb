package io.chatintake.channel.webhook;

import io.chatintake.content.ExpiringContent;
import io.chatintake.work.RetainedTable;
import java.util.List;

/**
 * What the webhook intake tells the layers below it, which never name it: the tables retention
 * purges and the content that expires. Registered in {@code META-INF/services}.
 * <p>
 * A deleted event leaves its key behind ({@code webhook_event_purged}, kept for
 * {@code retention.dedupe-key-days}), so a replay of its signed bytes is still a duplicate. Only
 * UnifyPort's events go with their work items; other channels' event kinds are not known here,
 * and their work goes by {@code retention.work-item-days}.
 */
public final class WebhookChannel implements RetainedTable.Contributor, ExpiringContent.Contributor {
    /** Events' bodies, removed by content expiry and erasure while the row (and so its key) stays; its kinds are each channel's own. */
    public static final ExpiringContent CONTENT = new ExpiringContent("webhook_event", "received_at", null,
            "body = NULL, payload = NULL, child = NULL", "body IS NOT NULL OR payload IS NOT NULL OR child IS NOT NULL",
            "x.derived_at IS NULL");

    @Override
    public List<RetainedTable> retainedTables() {
        return List.of(
                RetainedTable.workSource("webhook_event", "received_at", "retention.webhook-event-days", WebhookWorkSource.kindOf("unifyport"))
                        .before("""
                                keys AS (INSERT INTO webhook_event_purged (workspace, channel, event_id)
                                         SELECT x.workspace, x.channel, x.event_id FROM webhook_event x JOIN doomed ON x.id = doomed.k
                                         ON CONFLICT ON CONSTRAINT webhook_event_purged_key DO UPDATE SET purged_at = now() RETURNING 1), """)
                        // Not derived yet: its child and work item are still to come from it.
                        .pending("x.derived_at IS NULL"),
                // The kept keys themselves, once older than any replay worth refusing.
                RetainedTable.plain("webhook_event_purged", "purged_at", "retention.dedupe-key-days"));
    }

    @Override
    public List<ExpiringContent> expiringContent() {
        return List.of(CONTENT);
    }
}
