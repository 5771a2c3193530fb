package io.chatintake.channel.unifyport;

import io.chatintake.channel.webhook.SignatureVerifier;
import io.chatintake.message.ChannelMessage;
import io.chatintake.store.JsonbText;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.HexFormat;
import java.util.Optional;

/**
 * A verified UnifyPort delivery, read only as far as storage needs it:
 * {@code { "id", "type", "provider", "account_id", "occurred_at", "data": {...} }}.
 * Ids stay strings (they can exceed 64 bits or carry letters). A body that is not a JSON object
 * is still an event: it is kept raw with {@link #parseError()} set, so it is never lost.
 *
 * @param eventId     the idempotency key: the body's {@code id} (covered by the signature, unlike the
 *                    {@code X-Device-Event-Id} header, which carries the same value), else the header,
 *                    else a digest of the body (so a redelivered unparseable body is still recognised)
 * @param payloadJson the body as text when it is JSON PostgreSQL can store as jsonb, else null
 * @param parseError  null, {@code invalid_json}, {@code not_an_object}, or why jsonb refuses the JSON
 *                    ({@code not_utf8}, {@code nul_character}, {@code lone_surrogate}, {@code byte_order_mark})
 */
public record UnifyPortEvent(String eventId, String deliveryId, String type, String provider, String accountId,
                             Instant occurredAt, byte[] body, String payloadJson, String parseError,
                             ChannelMessage message) {

    private static final ObjectMapper JSON = new ObjectMapper()
            // "{...} trailing garbage" is not JSON for PostgreSQL either; refusing it here keeps
            // the jsonb insert from failing (and the event from being retried forever).
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    public static UnifyPortEvent parse(byte[] body, String eventIdHeader, String deliveryId) {
        String headerId = eventIdHeader == null || eventIdHeader.isBlank() ? null : eventIdHeader.trim();
        JsonNode root;
        try {
            root = JSON.readTree(body);
        } catch (IOException e) {
            root = null;
        }
        if (root == null || root.isMissingNode()) {
            return raw(body, headerId, deliveryId, null, "invalid_json");
        }
        // Jackson reads JSON that jsonb refuses (UTF-16, a NUL, a lone surrogate, a byte-order mark):
        // such a body is kept raw, or its insert would fail on every retry of the delivery.
        Optional<String> utf8 = JsonbText.utf8(body);
        Optional<String> refusal = utf8.isEmpty() ? Optional.of(JsonbText.NOT_UTF8) : JsonbText.refusal(utf8.get());
        if (refusal.isPresent()) {
            return raw(body, headerId, deliveryId, null, refusal.get());
        }
        String text = utf8.get();
        if (!root.isObject()) {
            return raw(body, headerId, deliveryId, text, "not_an_object");
        }
        String type = text(root, "type");
        String provider = text(root, "provider");
        String accountId = text(root, "account_id");
        // A replayed request with an edited header must not become a second event.
        String eventId = Optional.ofNullable(text(root, "id")).or(() -> Optional.ofNullable(headerId)).orElseGet(() -> digest(body));
        return new UnifyPortEvent(eventId, deliveryId, type, provider, accountId, instant(text(root, "occurred_at")),
                body, text, null, message(type, provider, accountId, root.path("data")));
    }

    private static UnifyPortEvent raw(byte[] body, String headerId, String deliveryId, String payloadJson, String parseError) {
        return new UnifyPortEvent(headerId != null ? headerId : digest(body), deliveryId, null, null, null, null,
                body, payloadJson, parseError, null);
    }

    /** The child message a message.* event is about, when it names one. */
    private static ChannelMessage message(String type, String provider, String accountId, JsonNode data) {
        if (type == null || !type.startsWith("message.") || provider == null || accountId == null) {
            return null;
        }
        JsonNode message = data.path("message");
        String conversationId = Optional.ofNullable(text(data.path("conversation"), "id")).orElse(text(data, "conversation_id"));
        String messageId = Optional.ofNullable(text(message, "id")).orElse(text(data, "message_id"));
        if (conversationId == null || messageId == null) {
            return null;
        }
        JsonNode attachments = message.path("attachments");
        JsonNode album = message.path("album");
        return new ChannelMessage(provider, accountId, conversationId, messageId, text(message, "type"),
                text(message, "text"), text(message, "caption"),
                attachments.isArray() ? attachments.toString() : null, instant(text(message, "sent_at")),
                text(album, "id"), integer(album, "index"), integer(album, "total"));
    }

    /** A field as text whatever its JSON type (ids may be numbers), null when absent or null. */
    private static String text(JsonNode node, String field) {
        JsonNode value = node.path(field);
        return value.isMissingNode() || value.isNull() || value.isContainerNode() ? null : value.asText();
    }

    private static Integer integer(JsonNode node, String field) {
        JsonNode value = node.path(field);
        return value.canConvertToInt() && value.isIntegralNumber() ? value.intValue() : null;
    }

    private static Instant instant(String text) {
        if (text == null) {
            return null;
        }
        try {
            return SignatureVerifier.parseTimestamp(text);
        } catch (DateTimeParseException | NumberFormatException e) {
            return null;
        }
    }

    private static String digest(byte[] body) {
        try {
            return "sha256:" + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(body));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    public boolean parsed() {
        return parseError == null;
    }

    @Override
    public String toString() {
        // Bodies can hold signed media URLs, reply tokens and auth payloads: never print them.
        return "UnifyPortEvent[" + eventId + " " + type + " " + provider + "]";
    }
}
