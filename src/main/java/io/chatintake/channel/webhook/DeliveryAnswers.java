package io.chatintake.channel.webhook;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a verified delivery is answered with when the provider expects more than a 2xx: a signed
 * handshake's challenge (Slack's {@code url_verification} echoes a field; Discord's PING wants a
 * fixed {@code {"type":1}}), and the provider's own acknowledgement of a stored event, by event
 * type (Discord: {@code {"type":5}}, "deferred", for an interaction answered later by a handler).
 */
final class DeliveryAnswers {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String ANY_TYPE = "*";

    /** A body and its content type. */
    record Answer(String contentType, String body) {
    }

    private final FieldSpec challenge;
    private final Answer fixedChallenge;
    private final Map<String, String> stored;

    private DeliveryAnswers(FieldSpec challenge, Answer fixedChallenge, Map<String, String> stored) {
        this.challenge = challenge;
        this.fixedChallenge = fixedChallenge;
        this.stored = stored;
    }

    /**
     * @param challenge a field spec, or a JSON object answered as it is
     * @param answers   null, or a JSON object: event type ({@code *} any other) to the JSON answered once stored
     * @throws IllegalArgumentException when a JSON value given is not JSON
     */
    static DeliveryAnswers parse(String challenge, String answers) {
        String spec = challenge == null ? "" : challenge.trim();
        Answer fixed = jsonObject(spec);
        Map<String, String> byType = new LinkedHashMap<>();
        if (answers != null && !answers.isBlank()) {
            JsonNode root = read("answers", answers);
            if (!root.isObject()) {
                throw new IllegalArgumentException("answers: expected a JSON object of event type -> JSON answer, got " + root.getNodeType());
            }
            root.fields().forEachRemaining(entry -> byType.put(entry.getKey(), entry.getValue().toString()));
        }
        return new DeliveryAnswers(fixed != null ? FieldSpec.parse("") : FieldSpec.parse(spec), fixed, Map.copyOf(byType));
    }

    /** The handshake's answer; null when the event holds no challenge (it is then stored like any event). */
    Answer handshake(WebhookEvent event) {
        if (fixedChallenge != null) {
            return fixedChallenge;
        }
        try {
            String text = challenge.text(new FieldSpec.Scope(JSON.readTree(event.payloadJson()), List.of(), name -> null));
            return text == null ? null : new Answer("text/plain; charset=utf-8", text);
        } catch (IOException | IllegalArgumentException e) {
            return null;
        }
    }

    /** The JSON answered once an event of this type is stored; null for the default status answer. */
    String stored(String eventType) {
        String answer = eventType == null ? null : stored.get(eventType);
        return answer != null ? answer : stored.get(ANY_TYPE);
    }

    /** A JSON object given as is; null for a field spec (a template such as {@code {/id}} is not JSON). */
    private static Answer jsonObject(String spec) {
        if (!spec.startsWith("{")) {
            return null;
        }
        try {
            JsonNode node = JSON.readTree(spec);
            return node != null && node.isObject() ? new Answer("application/json", node.toString()) : null;
        } catch (JsonProcessingException e) {
            return null;
        }
    }

    private static JsonNode read(String option, String json) {
        try {
            return JSON.readTree(json);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException(option + ": not JSON (" + e.getOriginalMessage() + ")");
        }
    }
}
