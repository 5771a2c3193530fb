package io.chatintake.work;

import org.apache.camel.spi.Metadata;

/** The headers a work route's exchange carries, whatever its kind; each kind adds its own. */
public final class WorkConstants {
    @Metadata(label = "consumer", description = "The item's idempotency key: the same for every attempt, and across a re-delivery of the same input",
            javaType = "String")
    public static final String IDEMPOTENCY_KEY = "IdempotencyKey";
    @Metadata(label = "consumer", description = "The work item's id (work_item.id)", javaType = "Long")
    public static final String WORK_ITEM_ID = "WorkItemId";
    @Metadata(label = "consumer", description = "The item's kind", javaType = "String")
    public static final String WORK_KIND = "WorkKind";
    @Metadata(label = "consumer", description = "This attempt's number, 1 for the first", javaType = "Integer")
    public static final String WORK_ATTEMPT = "WorkAttempt";

    private WorkConstants() {
    }
}
