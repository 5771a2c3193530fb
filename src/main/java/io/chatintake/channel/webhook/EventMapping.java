package io.chatintake.channel.webhook;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.MissingNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.chatintake.message.ChannelMessage;
import io.chatintake.store.JsonbText;
import io.chatintake.work.TraceContext;
import java.io.IOException;
import java.math.BigDecimal;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.DateTimeException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;
import java.util.Optional;
import java.util.Map;
import java.util.function.Function;

/**
 * How one channel's deliveries become events: where the events are in a body, and where each
 * field of an event is ({@link FieldSpec}s). Everything a channel needs is configuration; the
 * option names are the {@code webhook-inbox} endpoint's (see {@link #OPTIONS}).
 * <p>
 * A body that is not JSON is still stored: form-encoded bodies (Slack slash commands and
 * interactivity) become an object of their fields, a field holding a JSON object (Slack's
 * {@code payload}) is read as one; anything else is one raw event keyed by a digest.
 */
public final class EventMapping {
    /** The options, each a {@link FieldSpec} except {@code events} and the three event-type lists. */
    public static final List<String> OPTIONS = List.of("events", "eventId", "eventType", "provider", "account", "occurredAt",
            "conversation", "messageId", "messageType", "text", "caption", "attachments", "sentAt",
            "albumId", "albumIndex", "albumTotal", "messageEvents", "contentEvents", "deleteEvents");

    /** The parse error (and type) of a verified body in which the mapping found no event: stored whole, as one raw event. */
    public static final String UNMAPPED = "unmapped";
    /** Under a btree entry's limit (about 2.7 kB) with the workspace and channel beside it. */
    static final int LONGEST_ID_BYTES = 512;

    private static final ObjectMapper JSON = new ObjectMapper()
            // "{...} trailing garbage" is not JSON for PostgreSQL either; refusing it here keeps
            // the jsonb insert from failing (and the event from being retried forever).
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    private final List<List<String>> locations;
    private final FieldSpec eventId;
    private final FieldSpec eventType;
    private final FieldSpec provider;
    private final FieldSpec account;
    private final FieldSpec occurredAt;
    private final FieldSpec conversation;
    private final FieldSpec messageId;
    private final FieldSpec messageType;
    private final FieldSpec text;
    private final FieldSpec caption;
    private final FieldSpec attachments;
    private final FieldSpec sentAt;
    private final FieldSpec albumId;
    private final FieldSpec albumIndex;
    private final FieldSpec albumTotal;
    private final List<String> messageEvents;
    private final List<String> contentEvents;
    private final List<String> deleteEvents;

    /** @param options by {@link #OPTIONS} name; a missing one is empty (no field; every type for the type lists) */
    public EventMapping(Map<String, String> options) {
        for (String key : options.keySet()) {
            if (!OPTIONS.contains(key)) {
                throw new IllegalArgumentException("unknown event mapping option '" + key + "' (" + String.join(", ", OPTIONS) + ")");
            }
        }
        locations = locations(options.get("events"));
        eventId = FieldSpec.parse(options.get("eventId"));
        eventType = FieldSpec.parse(options.get("eventType"));
        provider = FieldSpec.parse(options.get("provider"));
        account = FieldSpec.parse(options.get("account"));
        occurredAt = FieldSpec.parse(options.get("occurredAt"));
        conversation = FieldSpec.parse(options.get("conversation"));
        messageId = FieldSpec.parse(options.get("messageId"));
        messageType = FieldSpec.parse(options.get("messageType"));
        text = FieldSpec.parse(options.get("text"));
        caption = FieldSpec.parse(options.get("caption"));
        attachments = FieldSpec.parse(options.get("attachments"));
        sentAt = FieldSpec.parse(options.get("sentAt"));
        albumId = FieldSpec.parse(options.get("albumId"));
        albumIndex = FieldSpec.parse(options.get("albumIndex"));
        albumTotal = FieldSpec.parse(options.get("albumTotal"));
        messageEvents = list(options.getOrDefault("messageEvents", "*"));
        contentEvents = list(options.getOrDefault("contentEvents", "*"));
        deleteEvents = list(options.getOrDefault("deleteEvents", ""));
    }

    /** The body is the whole array of events: an empty one is a verification call (LINE). */
    public boolean splitsEvents() {
        return !locations.isEmpty();
    }

    /**
     * The events of one verified delivery, in body order; empty when the locations hold only
     * empty arrays; one {@link #UNMAPPED} raw event when the body holds something else there.
     *
     * @param headers request headers, for {@code header:} specs
     */
    public List<WebhookEvent> events(byte[] body, String contentType, Function<String, String> headers, String deliveryId) {
        JsonNode root = parse(body, contentType);
        if (root == null) {
            return List.of(raw(body, headers, deliveryId, null, "invalid_json"));
        }
        // Jackson reads JSON that jsonb refuses (UTF-16, a NUL, a lone surrogate, a byte-order mark):
        // such a body is kept raw, or its insert would fail on every retry of the delivery.
        Optional<String> refusal = isForm(contentType) ? Optional.empty()
                : JsonbText.utf8(body).map(JsonbText::refusal).orElse(Optional.of(JsonbText.NOT_UTF8));
        if (refusal.isPresent()) {
            return List.of(raw(body, headers, deliveryId, null, refusal.get()));
        }
        if (!root.isObject()) {
            return List.of(raw(body, headers, deliveryId, root.toString(), "not_an_object"));
        }
        if (locations.isEmpty()) {
            return List.of(event(root, List.of(), body, headers, deliveryId));
        }
        List<WebhookEvent> events = new ArrayList<>();
        boolean followed = true;
        for (List<String> location : locations) {
            followed &= collect(root, new ArrayList<>(), location, 0, headers, deliveryId, events);
        }
        if (events.isEmpty() && !followed) {
            // Authentic, yet nothing where events are expected (WhatsApp's value.errors, account updates):
            // kept whole, as the provider will not send it again.
            return List.of(raw(body, headers, deliveryId, root.toString(), UNMAPPED));
        }
        return events;
    }

    /**
     * @return whether the body followed the location everywhere: false when a key was missing or
     * a value had another shape, true when it held only events and empty arrays (LINE's "Verify")
     */
    private boolean collect(JsonNode node, List<JsonNode> ancestors, List<String> location, int at,
                            Function<String, String> headers, String deliveryId, List<WebhookEvent> events) {
        if (at == location.size()) {
            if (node.isObject()) {
                events.add(event(node, List.copyOf(ancestors), node.toString().getBytes(StandardCharsets.UTF_8), headers, deliveryId));
                return true;
            }
            return false;
        }
        String token = location.get(at);
        ancestors.add(node);
        boolean followed;
        if (token.equals("*")) {
            followed = node.isArray();
            if (followed) {
                for (JsonNode element : node) {
                    followed &= collect(element, ancestors, location, at + 1, headers, deliveryId, events);
                }
            }
        } else {
            followed = node.has(token) && collect(node.get(token), ancestors, location, at + 1, headers, deliveryId, events);
        }
        ancestors.remove(ancestors.size() - 1);
        return followed;
    }

    private WebhookEvent event(JsonNode node, List<JsonNode> ancestors, byte[] bytes, Function<String, String> headers,
                               String deliveryId) {
        FieldSpec.Scope scope = new FieldSpec.Scope(node, ancestors, headers);
        String id = eventId.text(scope);
        String type = eventType.text(scope);
        String providerName = provider.text(scope);
        String accountId = account.text(scope);
        Instant occurred = instant(occurredAt.text(scope));
        ChannelMessage message = null;
        ChannelMessage.Change change = null;
        String conversationId = conversation.text(scope);
        String childId = messageId.text(scope);
        if (matches(messageEvents, type) && providerName != null && accountId != null && conversationId != null && childId != null) {
            message = new ChannelMessage(providerName, accountId, conversationId, childId, messageType.text(scope),
                    text.text(scope), caption.text(scope), attachments.json(scope), instant(sentAt.text(scope)),
                    albumId.text(scope), albumIndex.integer(scope), albumTotal.integer(scope));
            change = matches(deleteEvents, type) ? ChannelMessage.Change.DELETE
                    : matches(contentEvents, type) ? ChannelMessage.Change.CONTENT : ChannelMessage.Change.REFERENCE;
        }
        String json = new String(bytes, StandardCharsets.UTF_8);
        // A form body is stored as received; its fields as JSON are what handlers and jsonb get.
        String payload = json.startsWith("{") || json.startsWith("[") ? json : node.toString();
        return new WebhookEvent(key(id, bytes), deliveryId, type, providerName, accountId, occurred,
                bytes, payload, null, message, change, TraceContext.current());
    }

    private WebhookEvent raw(byte[] body, Function<String, String> headers, String deliveryId, String payloadJson, String parseError) {
        String id = eventId.text(new FieldSpec.Scope(MissingNode.getInstance(), List.of(), headers));
        // An unmapped body's type says so too, for handlers that route on ChatIntakeEventType.
        return new WebhookEvent(key(id, body), deliveryId, UNMAPPED.equals(parseError) ? UNMAPPED : null, null, null,
                null, body, payloadJson, parseError, null, null, TraceContext.current());
    }

    /** JSON, or a form body as an object of its fields; null when neither. */
    private static JsonNode parse(byte[] body, String contentType) {
        if (isForm(contentType)) {
            return form(new String(body, StandardCharsets.UTF_8));
        }
        try {
            JsonNode root = JSON.readTree(body);
            return root == null || root.isMissingNode() ? null : root;
        } catch (IOException e) {
            return null;
        }
    }

    private static boolean isForm(String contentType) {
        return contentType != null && contentType.toLowerCase(Locale.ROOT).startsWith("application/x-www-form-urlencoded");
    }

    private static JsonNode form(String text) {
        ObjectNode fields = JSON.createObjectNode();
        for (String pair : text.split("&")) {
            if (pair.isEmpty()) {
                continue;
            }
            int eq = pair.indexOf('=');
            try {
                String name = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
                String value = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
                fields.set(name, embedded(value));
            } catch (IllegalArgumentException e) {
                return null;
            }
        }
        return fields;
    }

    /** A field whose value is a JSON object (Slack's interactivity {@code payload}) is kept as one. */
    private static JsonNode embedded(String value) {
        if (value.startsWith("{") && !value.contains("\\u0000")) {
            try {
                return JSON.readTree(value);
            } catch (IOException e) {
                // not JSON after all: a plain text field
            }
        }
        return JSON.getNodeFactory().textNode(value);
    }

    private static List<List<String>> locations(String spec) {
        List<List<String>> locations = new ArrayList<>();
        if (spec == null || spec.isBlank() || spec.trim().equals("/")) {
            return locations;
        }
        for (String location : spec.split("\\|")) {
            String pointer = location.trim();
            if (!pointer.startsWith("/")) {
                throw new IllegalArgumentException("events: '" + pointer + "' is not a JSON Pointer (use * for each array element)");
            }
            List<String> tokens = new ArrayList<>();
            for (String token : pointer.substring(1).split("/")) {
                tokens.add(token.replace("~1", "/").replace("~0", "~"));
            }
            locations.add(List.copyOf(tokens));
        }
        return List.copyOf(locations);
    }

    private static List<String> list(String spec) {
        List<String> values = new ArrayList<>();
        for (String value : spec.split(",")) {
            if (!value.isBlank()) {
                values.add(value.trim());
            }
        }
        return List.copyOf(values);
    }

    /** {@code *} alone matches every type (even none); {@code message.*} a prefix; anything else itself. */
    private static boolean matches(List<String> patterns, String type) {
        for (String pattern : patterns) {
            if (pattern.equals("*")
                    || type != null && (pattern.endsWith("*") ? type.startsWith(pattern.substring(0, pattern.length() - 1)) : type.equals(pattern))) {
                return true;
            }
        }
        return false;
    }

    private static final Pattern EPOCH_MILLIS = Pattern.compile("\\d{13}");
    private static final Pattern FRACTIONAL_EPOCH_SECONDS = Pattern.compile("\\d{1,12}\\.\\d{1,9}");

    /**
     * Unix seconds (Slack's {@code 1355517523.000005} too), Unix milliseconds (13 digits, LINE) or
     * RFC 3339; null when it is none of them: a bad time never refuses an authentic event.
     */
    static Instant instant(String value) {
        if (value == null) {
            return null;
        }
        String v = value.trim();
        try {
            if (EPOCH_MILLIS.matcher(v).matches()) {
                return Instant.ofEpochMilli(Long.parseLong(v));
            }
            if (FRACTIONAL_EPOCH_SECONDS.matcher(v).matches()) {
                BigDecimal seconds = new BigDecimal(v);
                return Instant.ofEpochSecond(seconds.longValue(), seconds.remainder(BigDecimal.ONE).movePointRight(9).longValue());
            }
            return SignatureVerifier.parseTimestamp(v);
        } catch (DateTimeException | NumberFormatException e) {
            return null;
        }
    }

    /**
     * The event's idempotency key: its id as the provider sent it, or a digest of the event's bytes
     * when it has none. An id too long for the dedupe index is keyed by its digest: real ids are
     * far shorter, and a redelivery of the same id still finds its first copy.
     */
    static String key(String id, byte[] eventBytes) {
        if (id == null) {
            return digest(eventBytes);
        }
        byte[] idBytes = id.getBytes(StandardCharsets.UTF_8);
        return idBytes.length > LONGEST_ID_BYTES ? digest(idBytes) : id;
    }

    static String digest(byte[] bytes) {
        try {
            return "sha256:" + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
