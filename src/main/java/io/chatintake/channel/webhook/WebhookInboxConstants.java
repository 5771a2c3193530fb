package io.chatintake.channel.webhook;

import java.util.Map;
import org.apache.camel.spi.Metadata;

/**
 * The headers a stored {@code webhook-inbox} event carries into its handler route ({@code work:<channel>-event}).
 * Every one starts with {@code ChatIntakeWebhook}; each is also set under its former name (see {@link #FORMER_NAMES}).
 */
public final class WebhookInboxConstants {
    @Metadata(label = "consumer", description = "Workspace of the event, the endpoint's workspace option (formerly ChatIntakeWorkspace)",
            javaType = "String")
    public static final String WORKSPACE = "ChatIntakeWebhookWorkspace";
    @Metadata(label = "consumer", description = "Channel of the event, the endpoint's channel name (formerly ChatIntakeChannel)",
            javaType = "String")
    public static final String CHANNEL = "ChatIntakeWebhookChannel";
    @Metadata(label = "consumer", description = "The event's id, as the eventId mapping found it, else a digest of its bytes"
            + " (formerly ChatIntakeEventId)", javaType = "String")
    public static final String EVENT_ID = "ChatIntakeWebhookEventId";
    @Metadata(label = "consumer", description = "The event's type, eventType mapping (formerly ChatIntakeEventType)", javaType = "String")
    public static final String EVENT_TYPE = "ChatIntakeWebhookEventType";
    @Metadata(label = "consumer", description = "The provider, provider mapping (formerly ChatIntakeProvider)", javaType = "String")
    public static final String PROVIDER = "ChatIntakeWebhookProvider";
    @Metadata(label = "consumer", description = "The account the event is for, account mapping (formerly ChatIntakeAccount)",
            javaType = "String")
    public static final String ACCOUNT = "ChatIntakeWebhookAccount";
    @Metadata(label = "consumer", description = "Row id of the event in webhook_event (formerly ChatIntakeStoredId)", javaType = "long")
    public static final String STORED_ID = "ChatIntakeWebhookStoredId";

    /** Each header's name before the one-prefix rename, still set beside it for routes that read it. */
    public static final Map<String, String> FORMER_NAMES = Map.of(
            WORKSPACE, "ChatIntakeWorkspace",
            CHANNEL, "ChatIntakeChannel",
            EVENT_ID, "ChatIntakeEventId",
            EVENT_TYPE, "ChatIntakeEventType",
            PROVIDER, "ChatIntakeProvider",
            ACCOUNT, "ChatIntakeAccount",
            STORED_ID, "ChatIntakeStoredId");

    private WebhookInboxConstants() {
    }
}
