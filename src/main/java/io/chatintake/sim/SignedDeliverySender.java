package io.chatintake.sim;

import io.chatintake.config.Secret;
import io.chatintake.channel.webhook.SignatureScheme;
import io.chatintake.channel.webhook.SignatureVerifier;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Delivers events the way UnifyPort does: POST with {@code X-Device-Event-Id} (the same on
 * every retry), a new {@code X-Device-Delivery-Id} per attempt, {@code X-Device-Timestamp} in
 * either form, and {@code X-Device-Signature} over timestamp + "." + body. Retries connection
 * errors, 408, 429 and 5xx; any other answer ends the delivery, as at the provider.
 * Given another {@link SignatureScheme} (Slack, LINE, Meta, a custom one) it signs the way that
 * sender does ({@link #postSigned}). With a public-key scheme ({@code ed25519} as Discord signs,
 * {@code ecdsa-p256-sha256}) its secret is the private key: hex of an Ed25519 seed, or base64/PEM
 * PKCS#8; the receiver is configured with the matching public key. Used by tests, the demo and
 * benchmarks.
 */
public final class SignedDeliverySender {
    private final SignatureScheme scheme;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final URI endpoint;
    private final Secret secret;
    private final Clock clock;
    private final Duration requestTimeout;

    /** The two forms UnifyPort's material shows for {@code X-Device-Timestamp}. */
    public enum TimestampForm {
        /** {@code 2026-06-08T12:34:56Z} */
        RFC3339,
        /** {@code 1716800000} */
        UNIX_SECONDS;

        public String format(Instant at) {
            Instant seconds = at.truncatedTo(ChronoUnit.SECONDS);
            return this == RFC3339 ? DateTimeFormatter.ISO_INSTANT.format(seconds) : Long.toString(seconds.getEpochSecond());
        }
    }

    /** One attempt as it goes on the wire; a null field is a header left out. */
    public record Delivery(String eventId, String deliveryId, String timestamp, String signature, byte[] body) {
        public Delivery withBody(byte[] newBody) {
            return new Delivery(eventId, deliveryId, timestamp, signature, newBody);
        }

        public Delivery withEventId(String newEventId) {
            return new Delivery(newEventId, deliveryId, timestamp, signature, body);
        }

        public Delivery withTimestamp(String newTimestamp) {
            return new Delivery(eventId, deliveryId, newTimestamp, signature, body);
        }

        public Delivery withSignature(String newSignature) {
            return new Delivery(eventId, deliveryId, timestamp, newSignature, body);
        }

        @Override
        public String toString() {
            return "Delivery[event " + eventId + ", delivery " + deliveryId + "]";
        }
    }

    /** What the receiver answered; status 0 when the connection failed. */
    public record Response(int status, String body, Delivery delivery) {
        /** The provider retries these and dead-letters every other 4xx. */
        public boolean retryable() {
            return status == 0 || status == 408 || status == 429 || status >= 500;
        }
    }

    public SignedDeliverySender(URI endpoint, Secret secret) {
        this(endpoint, secret, Clock.systemUTC(), Duration.ofSeconds(30));
    }

    /** A sender signing with {@code scheme}, e.g. {@code SignatureScheme.parse("slack")}. */
    public SignedDeliverySender(URI endpoint, Secret secret, SignatureScheme scheme) {
        this(endpoint, secret, scheme, Clock.systemUTC(), Duration.ofSeconds(30));
    }

    public SignedDeliverySender(URI endpoint, Secret secret, Clock clock, Duration requestTimeout) {
        this(endpoint, secret, SignatureScheme.unifyport(), clock, requestTimeout);
    }

    public SignedDeliverySender(URI endpoint, Secret secret, SignatureScheme scheme, Clock clock, Duration requestTimeout) {
        this.scheme = scheme;
        this.endpoint = endpoint;
        this.secret = secret;
        this.clock = clock;
        this.requestTimeout = requestTimeout;
    }

    /** A signed attempt with a new delivery id, signed now. */
    public Delivery sign(String eventId, byte[] body, TimestampForm form) {
        return sign(eventId, body, form.format(clock.instant()));
    }

    /** A signed attempt with the timestamp header exactly as given (any form, any time). */
    public Delivery sign(String eventId, byte[] body, String timestamp) {
        String signature = SignatureVerifier.signatureHeaderValue(scheme, secret, null, timestamp, body);
        return new Delivery(eventId, "dlv_" + UUID.randomUUID(), timestamp, signature, body);
    }

    /** Posts one attempt, no retry. */
    public Response post(Delivery delivery) {
        HttpRequest.Builder request = HttpRequest.newBuilder(endpoint)
                .timeout(requestTimeout)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(delivery.body()));
        headers(delivery).forEach((name, value) -> header(request, name, value));
        return send(request, delivery);
    }

    /** Posts one attempt over a connection of the caller's (a load generator's), no retry. */
    public Response post(Delivery delivery, PlainHttpConnection connection) {
        try {
            PlainHttpConnection.Answer answer = connection.post("application/json", headers(delivery), delivery.body());
            return new Response(answer.status(), answer.body(), delivery);
        } catch (IOException e) {
            return new Response(0, e.getClass().getSimpleName(), delivery);
        }
    }

    /** An attempt's own headers; a null value is a header left out. */
    private static Map<String, String> headers(Delivery delivery) {
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("X-Device-Event-Id", delivery.eventId());
        headers.put("X-Device-Delivery-Id", delivery.deliveryId());
        headers.put("X-Device-Timestamp", delivery.timestamp());
        headers.put("X-Device-Signature", delivery.signature());
        return headers;
    }

    private Response send(HttpRequest.Builder request, Delivery delivery) {
        try {
            HttpResponse<String> response = http.send(request.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
            return new Response(response.statusCode(), response.body(), delivery);
        } catch (IOException e) {
            return new Response(0, e.getClass().getSimpleName(), delivery);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Response(0, "interrupted", delivery);
        }
    }

    /**
     * The headers a sender of this scheme puts on {@code body} signed at {@code at}: the signature,
     * and the timestamp (Unix seconds) and message id when the scheme signs them.
     */
    public Map<String, String> signatureHeaders(byte[] body, Instant at) {
        String timestamp = scheme.timestampHeader() != null || scheme.format() == SignatureScheme.Format.STRIPE
                ? Long.toString(at.getEpochSecond()) : null;
        String id = scheme.idHeader() == null ? null : "msg_" + UUID.randomUUID();
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put(scheme.signatureHeader(), SignatureVerifier.signatureHeaderValue(scheme, secret, id, timestamp, body));
        if (scheme.timestampHeader() != null) {
            headers.put(scheme.timestampHeader(), timestamp);
        }
        if (id != null) {
            headers.put(scheme.idHeader(), id);
        }
        return headers;
    }

    /** Posts {@code body} signed now with this sender's scheme. */
    public Response postSigned(byte[] body, String contentType) {
        return postRaw(body, contentType, signatureHeaders(body, clock.instant()));
    }

    /** Posts exactly this body with exactly these headers (a provider's published example, a tampered copy). */
    public Response postRaw(byte[] body, String contentType, Map<String, String> headers) {
        HttpRequest.Builder request = HttpRequest.newBuilder(endpoint).timeout(requestTimeout)
                .header("Content-Type", contentType).POST(HttpRequest.BodyPublishers.ofByteArray(body));
        headers.forEach((name, value) -> header(request, name, value));
        return send(request, null);
    }

    /**
     * Delivers like the provider: up to {@code maxAttempts}, each re-signed with a fresh
     * timestamp and a new delivery id but the same event id, pausing {@code backoff} between.
     */
    public List<Response> deliver(String eventId, byte[] body, TimestampForm form, int maxAttempts, Duration backoff) {
        List<Response> attempts = new ArrayList<>();
        for (int attempt = 1; attempt <= maxAttempts; attempt++) {
            Response response = post(sign(eventId, body, form));
            attempts.add(response);
            if (!response.retryable() || attempt == maxAttempts) {
                break;
            }
            try {
                Thread.sleep(backoff.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        return attempts;
    }

    /** A UnifyPort envelope; {@code dataJson} is the {@code data} object as JSON text. */
    public static byte[] envelope(String eventId, String type, String provider, String accountId, Instant occurredAt,
                                  String dataJson) {
        String json = "{\"id\":" + quote(eventId) + ",\"type\":" + quote(type) + ",\"provider\":" + quote(provider)
                + ",\"account_id\":" + quote(accountId) + ",\"occurred_at\":" + quote(DateTimeFormatter.ISO_INSTANT.format(occurredAt))
                + ",\"data\":" + dataJson + "}";
        return json.getBytes(StandardCharsets.UTF_8);
    }

    private static String quote(String value) {
        return "\"" + value.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    private static void header(HttpRequest.Builder request, String name, String value) {
        if (value != null) {
            request.header(name, value);
        }
    }
}
