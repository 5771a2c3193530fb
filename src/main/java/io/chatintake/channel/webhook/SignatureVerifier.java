package io.chatintake.channel.webhook;

import io.chatintake.config.Secret;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;
import java.util.regex.Pattern;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Checks that a request was signed by a holder of one of the configured secrets, following a
 * {@link SignatureScheme}. A pure function of (secrets, headers, raw body bytes, now): no I/O,
 * no clock of its own, nothing logged. Several secrets are accepted so a secret can be rotated
 * without rejecting deliveries signed with the old one while the change rolls out. For a
 * public-key scheme ({@code ed25519}, {@code ecdsa-p256-sha256}) the "secrets" are the sender's
 * public keys, and {@link PublicKeySignature} checks the signature instead of an HMAC.
 */
public final class SignatureVerifier {
    private static final String HMAC = "HmacSHA256";

    private final SignatureScheme scheme;
    private final List<byte[]> keys;
    private final PublicKeySignature publicKeys;

    /** @throws IllegalArgumentException when there is no secret, or one does not parse (the message never quotes it) */
    public SignatureVerifier(SignatureScheme scheme, List<Secret> secrets) {
        this.scheme = scheme;
        List<Secret> given = secrets.stream().filter(s -> !s.isEmpty()).toList();
        if (given.isEmpty()) {
            throw new IllegalArgumentException("signature scheme " + scheme.name() + ": no secret configured");
        }
        this.publicKeys = scheme.algorithm().publicKey() ? PublicKeySignature.verifier(scheme, given) : null;
        this.keys = publicKeys != null ? List.of() : given.stream().map(s -> key(scheme, s)).toList();
    }

    /** Why a request was not accepted. {@link #code()} is the short machine-readable form sent back. */
    public enum Reason {
        MISSING_SIGNATURE, MISSING_TIMESTAMP, MISSING_ID, MALFORMED_SIGNATURE, MALFORMED_TIMESTAMP,
        STALE_TIMESTAMP, FUTURE_TIMESTAMP, BAD_SIGNATURE;

        public String code() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** The outcome: verified, or the reason it was not. */
    public record Verification(Reason reason) {
        private static final Verification OK = new Verification(null);

        public static Verification ok() {
            return OK;
        }

        public boolean verified() {
            return reason == null;
        }
    }

    /**
     * @param headers a request header by name (case-insensitive lookup is the caller's), null when absent
     * @param body    the raw body bytes exactly as received
     * @param now     the receiver's current time, for the freshness check
     */
    public Verification verify(Function<String, String> headers, byte[] body, Instant now) {
        String signatureValue = blankToNull(headers.apply(scheme.signatureHeader()));
        if (signatureValue == null) {
            return new Verification(Reason.MISSING_SIGNATURE);
        }
        if (scheme.format() == SignatureScheme.Format.TOKEN) {
            return tokenMatches(signatureValue) ? Verification.ok() : new Verification(Reason.BAD_SIGNATURE);
        }
        String timestamp;
        List<String> candidates;
        if (scheme.format() == SignatureScheme.Format.STRIPE) {
            StripeHeader parsed = StripeHeader.parse(signatureValue);
            if (parsed == null) {
                return new Verification(Reason.MALFORMED_SIGNATURE);
            }
            timestamp = parsed.timestamp();
            candidates = parsed.signatures();
        } else {
            timestamp = scheme.timestampHeader() == null ? null : blankToNull(headers.apply(scheme.timestampHeader()));
            if (scheme.timestampHeader() != null && timestamp == null) {
                return new Verification(Reason.MISSING_TIMESTAMP);
            }
            candidates = scheme.format() == SignatureScheme.Format.LIST
                    ? List.of(signatureValue.trim().split("\\s+")) : List.of(signatureValue.trim());
        }
        String id = null;
        if (scheme.idHeader() != null) {
            id = blankToNull(headers.apply(scheme.idHeader()));
            if (id == null) {
                return new Verification(Reason.MISSING_ID);
            }
        }
        if (timestamp != null) {
            Reason stale = freshness(timestamp, now, scheme.tolerance());
            if (stale != null) {
                return new Verification(stale);
            }
        }
        List<byte[]> presented = decodeAll(candidates);
        byte[] signed = signedBytes(scheme, id, timestamp, body);
        if (publicKeys != null) {
            // Nothing secret to leak through timing here: the keys are public.
            return presented.stream().anyMatch(candidate -> publicKeys.verifies(signed, candidate))
                    ? Verification.ok() : new Verification(Reason.BAD_SIGNATURE);
        }
        boolean match = false;
        for (byte[] key : keys) {
            byte[] expected = hmac(key, signed);
            for (byte[] candidate : presented) {
                // Constant time: how much of a guess matched must not show in the answer time.
                match |= MessageDigest.isEqual(expected, candidate);
            }
        }
        return match ? Verification.ok() : new Verification(Reason.BAD_SIGNATURE);
    }

    /**
     * The value a sender puts in the signature header (the MAC with the scheme's prefix; for
     * Stripe the whole {@code t=...,v1=...} header), for {@code SignedDeliverySender} and tests.
     * For a public-key scheme {@code secret} is the sender's private key.
     */
    public static String signatureHeaderValue(SignatureScheme scheme, Secret secret, String id, String timestamp, byte[] body) {
        if (scheme.format() == SignatureScheme.Format.TOKEN) {
            return secret.reveal();
        }
        byte[] signed = signedBytes(scheme, id, timestamp, body);
        byte[] mac = scheme.algorithm().publicKey() ? PublicKeySignature.sign(scheme, secret, signed) : hmac(key(scheme, secret), signed);
        String encoded = scheme.encoding() == SignatureScheme.Encoding.HEX
                ? HexFormat.of().formatHex(mac) : Base64.getEncoder().encodeToString(mac);
        return scheme.format() == SignatureScheme.Format.STRIPE
                ? "t=" + timestamp + ",v1=" + encoded : scheme.prefix() + encoded;
    }

    /**
     * Accepts Unix seconds and RFC 3339; bounds the skew both ways, because a timestamp far in
     * the future would otherwise let a captured request be replayed for as long.
     */
    static Reason freshness(String timestamp, Instant now, Duration tolerance) {
        Instant signedAt;
        try {
            signedAt = parseTimestamp(timestamp);
        } catch (DateTimeException | NumberFormatException e) {
            return Reason.MALFORMED_TIMESTAMP;
        }
        if (signedAt.isBefore(now.minus(tolerance))) {
            return Reason.STALE_TIMESTAMP;
        }
        if (signedAt.isAfter(now.plus(tolerance))) {
            return Reason.FUTURE_TIMESTAMP;
        }
        return null;
    }

    private static final Pattern EPOCH_SECONDS = Pattern.compile("\\d{1,12}");

    public static Instant parseTimestamp(String timestamp) {
        String value = timestamp.trim();
        if (EPOCH_SECONDS.matcher(value).matches()) {
            return Instant.ofEpochSecond(Long.parseLong(value));
        }
        // RFC 3339 allows a lower-case 't'/'z' and a space between date and time.
        String iso = value.toUpperCase(Locale.ROOT).replace(' ', 'T');
        return Rfc3339Timestamp.parse(iso);
    }

    private boolean tokenMatches(String presented) {
        // Digests first, so the comparison does not even reveal the secret's length.
        byte[] given = sha256(presented.getBytes(StandardCharsets.UTF_8));
        boolean match = false;
        for (byte[] key : keys) {
            match |= MessageDigest.isEqual(sha256(key), given);
        }
        return match;
    }

    private List<byte[]> decodeAll(List<String> candidates) {
        List<byte[]> decoded = new ArrayList<>();
        for (String candidate : candidates) {
            if (!candidate.startsWith(scheme.prefix())) {
                continue;
            }
            String value = candidate.substring(scheme.prefix().length());
            try {
                decoded.add(scheme.encoding() == SignatureScheme.Encoding.HEX
                        ? HexFormat.of().parseHex(value) : Base64.getDecoder().decode(value));
            } catch (IllegalArgumentException e) {
                // Not a signature in this encoding: it cannot match; the others may.
            }
        }
        return decoded;
    }

    private static byte[] signedBytes(SignatureScheme scheme, String id, String timestamp, byte[] body) {
        String template = scheme.template();
        int at = template.indexOf(SignatureScheme.BODY);
        byte[] before = fill(template.substring(0, at), id, timestamp);
        byte[] after = fill(template.substring(at + SignatureScheme.BODY.length()), id, timestamp);
        byte[] signed = new byte[before.length + body.length + after.length];
        System.arraycopy(before, 0, signed, 0, before.length);
        System.arraycopy(body, 0, signed, before.length, body.length);
        System.arraycopy(after, 0, signed, before.length + body.length, after.length);
        return signed;
    }

    private static byte[] fill(String part, String id, String timestamp) {
        String filled = part.replace(SignatureScheme.ID, id == null ? "" : id)
                .replace(SignatureScheme.TIMESTAMP, timestamp == null ? "" : timestamp);
        return filled.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] key(SignatureScheme scheme, Secret secret) {
        String value = secret.reveal().trim();
        if (scheme.secretFormat() == SignatureScheme.SecretFormat.WHSEC_BASE64) {
            try {
                return Base64.getDecoder().decode(value.startsWith("whsec_") ? value.substring("whsec_".length()) : value);
            } catch (IllegalArgumentException e) {
                // The message must not quote the secret.
                throw new IllegalArgumentException("signature scheme " + scheme.name() + ": a secret is not whsec_<base64>");
            }
        }
        return value.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] hmac(byte[] key, byte[] message) {
        try {
            Mac mac = Mac.getInstance(HMAC);
            mac.init(new SecretKeySpec(key, HMAC));
            return mac.doFinal(message);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 unavailable in this JVM", e);
        }
    }

    private static byte[] sha256(byte[] value) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(value);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("SHA-256 unavailable in this JVM", e);
        }
    }

    private static String blankToNull(String value) {
        return value == null || value.isBlank() ? null : value;
    }

    /** {@code t=<unix seconds>,v1=<sig>[,v1=<sig>...]}; other schemes (v0) are ignored, as Stripe does. */
    private record StripeHeader(String timestamp, List<String> signatures) {
        static StripeHeader parse(String header) {
            String timestamp = null;
            List<String> signatures = new ArrayList<>();
            for (String item : header.split(",")) {
                int eq = item.indexOf('=');
                if (eq <= 0) {
                    continue;
                }
                String key = item.substring(0, eq).trim();
                String value = item.substring(eq + 1).trim();
                if (key.equals("t")) {
                    timestamp = value;
                } else if (key.equals("v1")) {
                    signatures.add(value);
                }
            }
            return timestamp == null || signatures.isEmpty() ? null : new StripeHeader(timestamp, signatures);
        }
    }
}
