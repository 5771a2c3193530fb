package io.chatintake.channel.webhook;

import java.lang.reflect.Field;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.camel.spi.UriParam;
import org.apache.camel.spi.UriParams;

/**
 * The {@code webhook-inbox} options that say where each event and each of its fields is in a
 * delivery ({@link EventMapping}; option names as {@link EventMapping#OPTIONS}). A field spec is a
 * JSON Pointer into the event, a Relative JSON Pointer ({@code 2/tenant}), {@code header:Name}, a
 * template ({@code status.{/status}}) or a constant; alternatives separated by {@code |} are tried in order.
 */
@UriParams
public class WebhookInboxMapping {
    @UriParam(label = "mapping", description = "Where the events are in a delivery: / or nothing for the whole body, else a JSON Pointer with an asterisk for every array element; several separated by a vertical bar")
    private String events;
    @UriParam(label = "mapping", description = "The event's id, its key for deduplication; none found: a digest of the event's bytes (a field spec)")
    private String eventId;
    @UriParam(label = "mapping", description = "The event's type (a field spec)")
    private String eventType;
    @UriParam(label = "mapping", description = "The provider a child message is from (a field spec)")
    private String provider;
    @UriParam(label = "mapping", description = "The account the event is for, e.g. 2/tenant: two levels up from the event (a field spec)")
    private String account;
    @UriParam(label = "mapping", description = "When the event happened: RFC 3339 or Unix seconds or milliseconds (a field spec)")
    private String occurredAt;
    @UriParam(label = "mapping", description = "The conversation a child message belongs to (a field spec)")
    private String conversation;
    @UriParam(label = "mapping", description = "The message's id within its conversation (a field spec)")
    private String messageId;
    @UriParam(label = "mapping", description = "The message's type: text, image, ... (a field spec)")
    private String messageType;
    @UriParam(label = "mapping", description = "The message's text (a field spec)")
    private String text;
    @UriParam(label = "mapping", description = "The message's caption (a field spec)")
    private String caption;
    @UriParam(label = "mapping", description = "The message's attachments: an array of objects with a url (a field spec)")
    private String attachments;
    @UriParam(label = "mapping", description = "When the message was sent (a field spec)")
    private String sentAt;
    @UriParam(label = "mapping", description = "The album (media group) the message belongs to (a field spec)")
    private String albumId;
    @UriParam(label = "mapping", description = "The message's position in its album (a field spec)")
    private String albumIndex;
    @UriParam(label = "mapping", description = "How many messages its album has (a field spec)")
    private String albumTotal;
    @UriParam(label = "mapping", description = "Event types that are about a message (a child message is stored): a comma list; an entry ending in an asterisk is a prefix, an asterisk alone is any")
    private String messageEvents;
    @UriParam(label = "mapping", description = "Event types that change a message's content: a comma list; an entry ending in an asterisk is a prefix, an asterisk alone is any")
    private String contentEvents;
    @UriParam(label = "mapping", description = "Event types that delete a message: a comma list; an entry ending in an asterisk is a prefix, an asterisk alone is any")
    private String deleteEvents;

    /** The options set, by name, as {@link EventMapping} takes them. */
    Map<String, String> options() {
        Map<String, String> options = new LinkedHashMap<>();
        for (Field field : WebhookInboxMapping.class.getDeclaredFields()) {
            if (field.isAnnotationPresent(UriParam.class)) {
                try {
                    Object value = field.get(this);
                    if (value != null) {
                        options.put(field.getName(), value.toString());
                    }
                } catch (IllegalAccessException e) {
                    throw new IllegalStateException(e);
                }
            }
        }
        return options;
    }

    public String getEvents() {
        return events;
    }

    public void setEvents(String events) {
        this.events = events;
    }

    public String getEventId() {
        return eventId;
    }

    public void setEventId(String eventId) {
        this.eventId = eventId;
    }

    public String getEventType() {
        return eventType;
    }

    public void setEventType(String eventType) {
        this.eventType = eventType;
    }

    public String getProvider() {
        return provider;
    }

    public void setProvider(String provider) {
        this.provider = provider;
    }

    public String getAccount() {
        return account;
    }

    public void setAccount(String account) {
        this.account = account;
    }

    public String getOccurredAt() {
        return occurredAt;
    }

    public void setOccurredAt(String occurredAt) {
        this.occurredAt = occurredAt;
    }

    public String getConversation() {
        return conversation;
    }

    public void setConversation(String conversation) {
        this.conversation = conversation;
    }

    public String getMessageId() {
        return messageId;
    }

    public void setMessageId(String messageId) {
        this.messageId = messageId;
    }

    public String getMessageType() {
        return messageType;
    }

    public void setMessageType(String messageType) {
        this.messageType = messageType;
    }

    public String getText() {
        return text;
    }

    public void setText(String text) {
        this.text = text;
    }

    public String getCaption() {
        return caption;
    }

    public void setCaption(String caption) {
        this.caption = caption;
    }

    public String getAttachments() {
        return attachments;
    }

    public void setAttachments(String attachments) {
        this.attachments = attachments;
    }

    public String getSentAt() {
        return sentAt;
    }

    public void setSentAt(String sentAt) {
        this.sentAt = sentAt;
    }

    public String getAlbumId() {
        return albumId;
    }

    public void setAlbumId(String albumId) {
        this.albumId = albumId;
    }

    public String getAlbumIndex() {
        return albumIndex;
    }

    public void setAlbumIndex(String albumIndex) {
        this.albumIndex = albumIndex;
    }

    public String getAlbumTotal() {
        return albumTotal;
    }

    public void setAlbumTotal(String albumTotal) {
        this.albumTotal = albumTotal;
    }

    public String getMessageEvents() {
        return messageEvents;
    }

    public void setMessageEvents(String messageEvents) {
        this.messageEvents = messageEvents;
    }

    public String getContentEvents() {
        return contentEvents;
    }

    public void setContentEvents(String contentEvents) {
        this.contentEvents = contentEvents;
    }

    public String getDeleteEvents() {
        return deleteEvents;
    }

    public void setDeleteEvents(String deleteEvents) {
        this.deleteEvents = deleteEvents;
    }
}
