package io.chatintake.channel.webhook;

import org.apache.camel.spi.Metadata;

/** The headers a stored {@code webhook-inbox} event carries into its handler route (direct:<channel>-event). */
public final class WebhookInboxConstants {
    @Metadata(description = "Workspace of the event (the endpoint's workspace option)", javaType = "String")
    public static final String WORKSPACE = "ChatIntakeWorkspace";
    @Metadata(description = "Channel of the event (the endpoint's channel name)", javaType = "String")
    public static final String CHANNEL = "ChatIntakeChannel";
    @Metadata(description = "The event's id, as the eventId mapping found it (else a digest of its bytes)", javaType = "String")
    public static final String EVENT_ID = "ChatIntakeEventId";
    @Metadata(description = "The event's type (eventType mapping)", javaType = "String")
    public static final String EVENT_TYPE = "ChatIntakeEventType";
    @Metadata(description = "The provider (provider mapping)", javaType = "String")
    public static final String PROVIDER = "ChatIntakeProvider";
    @Metadata(description = "The account the event is for (account mapping)", javaType = "String")
    public static final String ACCOUNT = "ChatIntakeAccount";
    @Metadata(description = "Row id of the event in webhook_event", javaType = "long")
    public static final String STORED_ID = "ChatIntakeStoredId";

    private WebhookInboxConstants() {
    }
}
