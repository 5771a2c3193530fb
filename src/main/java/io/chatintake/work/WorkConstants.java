package io.chatintake.work;

import java.util.Map;
import org.apache.camel.spi.Metadata;

/**
 * The headers a work route's exchange carries, whatever its kind; each kind adds its own. Every one
 * starts with {@code ChatIntakeWork}; each is also set under its former name (see {@link #FORMER_NAMES}).
 */
public final class WorkConstants {
    @Metadata(label = "consumer", description = "The item's idempotency key: the same for every attempt, and across a re-delivery"
            + " of the same input (formerly IdempotencyKey, which a guarded effect also reads)", javaType = "String")
    public static final String IDEMPOTENCY_KEY = "ChatIntakeWorkIdempotencyKey";
    @Metadata(label = "consumer", description = "The work item's id, work_item.id (formerly WorkItemId)", javaType = "Long")
    public static final String WORK_ITEM_ID = "ChatIntakeWorkItemId";
    @Metadata(label = "consumer", description = "The item's kind (formerly WorkKind)", javaType = "String")
    public static final String WORK_KIND = "ChatIntakeWorkKind";
    @Metadata(label = "consumer", description = "This attempt's number, 1 for the first (formerly WorkAttempt)", javaType = "Integer")
    public static final String WORK_ATTEMPT = "ChatIntakeWorkAttempt";

    /** Each header's name before the one-prefix rename, still set beside it for routes that read it. */
    public static final Map<String, String> FORMER_NAMES = Map.of(
            IDEMPOTENCY_KEY, "IdempotencyKey",
            WORK_ITEM_ID, "WorkItemId",
            WORK_KIND, "WorkKind",
            WORK_ATTEMPT, "WorkAttempt");

    private WorkConstants() {
    }
}
