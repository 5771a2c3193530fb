package io.chatintake.channel.webhook;

import io.chatintake.message.ChannelMessage;
import java.time.Instant;

/**
 * One verified event of a delivery, read only as far as storage needs it. Ids stay strings
 * (they can exceed 64 bits or carry letters). A body that is not JSON is still an event: it is
 * kept raw with {@link #parseError()} set, so it is never lost.
 *
 * @param eventId     the idempotency key within (workspace, channel): as the channel's mapping
 *                    finds it, else a digest of the event's bytes (a redelivery is recognised anyway)
 * @param body        the event's bytes: the delivery exactly as signed when the event is the whole
 *                    body; the event's JSON when a delivery carries several
 * @param payloadJson the event as JSON text when PostgreSQL can store it as jsonb, else null
 * @param parseError  null, {@code invalid_json}, {@code not_an_object}, why jsonb refuses the JSON
 *                    ({@code not_utf8}, {@code nul_character}, {@code lone_surrogate}, {@code byte_order_mark}),
 *                    or {@code unmapped}: JSON in which the mapping found no event (the whole body; its type too)
 * @param message     the child message it is about, or null
 * @param change      what it does to that child (null without one)
 * @param traceContext the W3C traceparent of the delivery's span, stored with the event's work; null while tracing is off
 */
public record WebhookEvent(String eventId, String deliveryId, String type, String provider, String accountId,
                           Instant occurredAt, byte[] body, String payloadJson, String parseError,
                           ChannelMessage message, ChannelMessage.Change change, String traceContext) {

    public boolean parsed() {
        return parseError == null;
    }

    /** The chat whose events the work dispatcher may keep in order; null when the event names none. */
    public String chatKey(String workspace) {
        return message == null ? null
                : String.join(":", workspace, message.provider(), message.accountId(), message.conversationId());
    }

    @Override
    public String toString() {
        // Bodies can hold signed media URLs, reply tokens and auth payloads: never print them.
        return "WebhookEvent[" + eventId + " " + type + " " + provider + "]";
    }
}
