package io.chatintake.channel.webhook;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * How one sender signs its webhooks: which headers carry what, which bytes are signed, how the
 * signature is written. Everything a {@link SignatureVerifier} needs besides the secrets.
 * <p>
 * Presets cover the common senders; {@link #parse(String)} reads a preset name optionally
 * followed by {@code ;key=value} overrides, so YAML and properties can select and tune a
 * scheme, or describe a custom one, without code:
 * <pre>
 *   unifyport
 *   github
 *   custom;signature-header=X-Signature;timestamp-header=X-Timestamp;template={timestamp}.{body};encoding=base64;prefix=sha256=;tolerance-seconds=600
 * </pre>
 *
 * @param name             shown in logs and metrics
 * @param format           how the signature header is laid out
 * @param signatureHeader  the header holding the signature(s) (the token for {@link Format#TOKEN})
 * @param timestampHeader  the header holding the signing time; null when the scheme has none
 *                         (or when the time is inside the signature header, {@link Format#STRIPE})
 * @param idHeader         the header holding a message id that is signed too; null when none
 * @param template         the signed bytes: {@code {id}}, {@code {timestamp}} as received,
 *                         {@code {body}} the raw body bytes (exactly once)
 * @param encoding         how the MAC is written
 * @param prefix           text before each signature value ({@code sha256=}, {@code v1,}); may be empty
 * @param secretFormat     how a configured secret becomes the HMAC key
 * @param tolerance        accepted skew of the timestamp, both ways; ignored without a timestamp
 * @param algorithm        HMAC with shared secrets, or a signature checked with public keys
 */
public record SignatureScheme(String name, Format format, String signatureHeader, String timestampHeader, String idHeader,
                              String template, Encoding encoding, String prefix, SecretFormat secretFormat,
                              Duration tolerance, Algorithm algorithm) {

    public static final Duration DEFAULT_TOLERANCE = Duration.ofSeconds(300);
    static final String BODY = "{body}";
    static final String TIMESTAMP = "{timestamp}";
    static final String ID = "{id}";

    /** How the signature header is laid out. */
    public enum Format {
        /** One signature value (after the prefix). */
        SINGLE,
        /** Space-separated {@code <prefix><signature>} values; any one may match (Standard Webhooks). */
        LIST,
        /** {@code t=<unix seconds>,v1=<sig>,v1=<sig>}: time and signatures in one header (Stripe). */
        STRIPE,
        /** No MAC: the header must equal a secret (Telegram's secret_token). */
        TOKEN
    }

    public enum Encoding { HEX, BASE64 }

    /** How a signature is made; the public-key ones are configured with public keys where the others take secrets. */
    public enum Algorithm {
        HMAC_SHA256(null),
        /** RFC 8032 (Discord); keys: 64 hex characters (the raw key) or base64/PEM X.509. */
        ED25519("Ed25519"),
        /** ECDSA over P-256 with SHA-256, the signature DER or raw r||s; keys: base64/PEM X.509 or hex of the 65-byte point. */
        ECDSA_P256_SHA256("SHA256withECDSA");

        private final String javaName;

        Algorithm(String javaName) {
            this.javaName = javaName;
        }

        /** The {@code java.security.Signature} algorithm; null for HMAC. */
        public String javaName() {
            return javaName;
        }

        public boolean publicKey() {
            return javaName != null;
        }

        /** As written in a spec: {@code ed25519}, {@code ecdsa-p256-sha256}. */
        public String spec() {
            return name().toLowerCase(Locale.ROOT).replace('_', '-');
        }

        static Algorithm ofSpec(String value) {
            return valueOf(value.trim().toUpperCase(Locale.ROOT).replace('-', '_'));
        }
    }

    public enum SecretFormat {
        /** The secret's UTF-8 bytes are the key. */
        UTF8,
        /** {@code whsec_<base64>}: the decoded bytes are the key (Standard Webhooks). */
        WHSEC_BASE64
    }

    public SignatureScheme {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(format, "format");
        Objects.requireNonNull(signatureHeader, "signature-header");
        Objects.requireNonNull(encoding, "encoding");
        Objects.requireNonNull(secretFormat, "secret-format");
        prefix = prefix == null ? "" : prefix;
        tolerance = tolerance == null ? DEFAULT_TOLERANCE : tolerance;
        algorithm = algorithm == null ? Algorithm.HMAC_SHA256 : algorithm;
        if (algorithm.publicKey() && (format == Format.TOKEN || format == Format.STRIPE)) {
            throw new IllegalArgumentException("signature scheme " + name + ": " + algorithm.spec() + " needs format single or list");
        }
        if (format != Format.TOKEN) {
            Objects.requireNonNull(template, "template");
            if (template.indexOf(BODY) < 0 || template.indexOf(BODY) != template.lastIndexOf(BODY)) {
                throw new IllegalArgumentException("signature scheme " + name + ": template must contain " + BODY + " exactly once");
            }
            if (template.contains(TIMESTAMP) && timestampHeader == null && format != Format.STRIPE) {
                throw new IllegalArgumentException("signature scheme " + name + ": template signs " + TIMESTAMP + " but no timestamp-header is set");
            }
            if (template.contains(ID) && idHeader == null) {
                throw new IllegalArgumentException("signature scheme " + name + ": template signs " + ID + " but no id-header is set");
            }
        }
    }

    /** UnifyPort: {@code X-Device-Signature = hex(HMAC(secret, X-Device-Timestamp + "." + body))}. */
    public static SignatureScheme unifyport() {
        return new SignatureScheme("unifyport", Format.SINGLE, "X-Device-Signature", "X-Device-Timestamp", null,
                "{timestamp}.{body}", Encoding.HEX, "", SecretFormat.UTF8, DEFAULT_TOLERANCE, Algorithm.HMAC_SHA256);
    }

    /** Standard Webhooks (Svix): {@code webhook-signature: v1,<base64> ...} over {@code id.timestamp.body}. */
    public static SignatureScheme standardWebhooks() {
        return new SignatureScheme("standard-webhooks", Format.LIST, "webhook-signature", "webhook-timestamp", "webhook-id",
                "{id}.{timestamp}.{body}", Encoding.BASE64, "v1,", SecretFormat.WHSEC_BASE64, DEFAULT_TOLERANCE, Algorithm.HMAC_SHA256);
    }

    /** Stripe: {@code Stripe-Signature: t=<ts>,v1=<hex>,...} over {@code t.body}; the whole secret is the key. */
    public static SignatureScheme stripeStyle() {
        return new SignatureScheme("stripe-style", Format.STRIPE, "Stripe-Signature", null, null,
                "{timestamp}.{body}", Encoding.HEX, "", SecretFormat.UTF8, DEFAULT_TOLERANCE, Algorithm.HMAC_SHA256);
    }

    /** GitHub: {@code X-Hub-Signature-256: sha256=<hex>} over the body; no timestamp, so no freshness check. */
    public static SignatureScheme github() {
        return new SignatureScheme("github", Format.SINGLE, "X-Hub-Signature-256", null, null,
                "{body}", Encoding.HEX, "sha256=", SecretFormat.UTF8, DEFAULT_TOLERANCE, Algorithm.HMAC_SHA256);
    }

    /** Slack: {@code X-Slack-Signature: v0=<hex>} over {@code v0:<X-Slack-Request-Timestamp>:body}, Unix seconds. */
    public static SignatureScheme slack() {
        return new SignatureScheme("slack", Format.SINGLE, "X-Slack-Signature", "X-Slack-Request-Timestamp", null,
                "v0:{timestamp}:{body}", Encoding.HEX, "v0=", SecretFormat.UTF8, DEFAULT_TOLERANCE, Algorithm.HMAC_SHA256);
    }

    /** LINE Messaging API: {@code X-Line-Signature: base64(HMAC(channel secret, body))}; no timestamp. */
    public static SignatureScheme line() {
        return new SignatureScheme("line", Format.SINGLE, "X-Line-Signature", null, null,
                "{body}", Encoding.BASE64, "", SecretFormat.UTF8, DEFAULT_TOLERANCE, Algorithm.HMAC_SHA256);
    }

    /** Meta (WhatsApp Cloud, Messenger, Instagram): {@code X-Hub-Signature-256: sha256=<hex>} over the body with the app secret. */
    public static SignatureScheme meta() {
        return new SignatureScheme("meta", Format.SINGLE, "X-Hub-Signature-256", null, null,
                "{body}", Encoding.HEX, "sha256=", SecretFormat.UTF8, DEFAULT_TOLERANCE, Algorithm.HMAC_SHA256);
    }

    /** Telegram Bot API webhooks: {@code X-Telegram-Bot-Api-Secret-Token} must equal the secret. */
    public static SignatureScheme telegramSecretToken() {
        return new SignatureScheme("telegram-secret-token", Format.TOKEN, "X-Telegram-Bot-Api-Secret-Token", null, null,
                null, Encoding.HEX, "", SecretFormat.UTF8, DEFAULT_TOLERANCE, Algorithm.HMAC_SHA256);
    }

    /**
     * Ed25519 over {@code timestamp + body}, laid out as Discord does: {@code X-Signature-Ed25519}
     * (hex) and {@code X-Signature-Timestamp} (Unix seconds); the keys are public keys.
     */
    public static SignatureScheme ed25519() {
        return new SignatureScheme("ed25519", Format.SINGLE, "X-Signature-Ed25519", "X-Signature-Timestamp", null,
                "{timestamp}{body}", Encoding.HEX, "", SecretFormat.UTF8, DEFAULT_TOLERANCE, Algorithm.ED25519);
    }

    /**
     * ECDSA P-256 with SHA-256 over {@code timestamp + body}, laid out as Twilio SendGrid's event
     * webhook: {@code X-Twilio-Email-Event-Webhook-Signature} (base64) and
     * {@code X-Twilio-Email-Event-Webhook-Timestamp}; the keys are public keys.
     */
    public static SignatureScheme ecdsaP256Sha256() {
        return new SignatureScheme("ecdsa-p256-sha256", Format.SINGLE, "X-Twilio-Email-Event-Webhook-Signature",
                "X-Twilio-Email-Event-Webhook-Timestamp", null, "{timestamp}{body}", Encoding.BASE64, "", SecretFormat.UTF8,
                DEFAULT_TOLERANCE, Algorithm.ECDSA_P256_SHA256);
    }

    /**
     * A preset by name ({@code unifyport}, {@code standard-webhooks}, {@code stripe-style},
     * {@code github}, {@code slack}, {@code line}, {@code meta}, {@code telegram-secret-token}, {@code ed25519},
     * {@code ecdsa-p256-sha256}, {@code custom}), then {@code ;key=value}
     * overrides: {@code signature-header}, {@code timestamp-header}, {@code id-header},
     * {@code template}, {@code encoding} (hex|base64), {@code prefix}, {@code format}
     * (single|list|stripe|token), {@code secret-format} (utf8|whsec_base64), {@code tolerance-seconds},
     * {@code algorithm} (hmac-sha256|ed25519|ecdsa-p256-sha256).
     * A {@code custom} scheme starts as a hex, un-prefixed, single-signature HMAC over the body.
     */
    public static SignatureScheme parse(String spec) {
        String[] parts = spec.trim().split(";");
        String preset = parts[0].trim().toLowerCase(Locale.ROOT);
        Map<String, String> options = new LinkedHashMap<>();
        for (int i = 1; i < parts.length; i++) {
            String part = parts[i];
            int eq = part.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("signature scheme '" + preset + "': expected key=value, got '" + part.trim() + "'");
            }
            // Only the first '=' splits: a prefix such as "sha256=" keeps its own.
            options.put(part.substring(0, eq).trim().toLowerCase(Locale.ROOT), part.substring(eq + 1).trim());
        }
        SignatureScheme base = switch (preset) {
            case "unifyport" -> unifyport();
            case "standard-webhooks" -> standardWebhooks();
            case "stripe-style" -> stripeStyle();
            case "github" -> github();
            case "telegram-secret-token" -> telegramSecretToken();
            case "slack" -> slack();
            case "line" -> line();
            case "meta" -> meta();
            case "ed25519" -> ed25519();
            case "ecdsa-p256-sha256" -> ecdsaP256Sha256();
            case "custom" -> new SignatureScheme("custom", Format.SINGLE, "X-Signature", null, null,
                    BODY, Encoding.HEX, "", SecretFormat.UTF8, DEFAULT_TOLERANCE, Algorithm.HMAC_SHA256);
            default -> throw new IllegalArgumentException("unknown signature scheme '" + preset + "' (unifyport, standard-webhooks, "
                    + "stripe-style, github, slack, line, meta, telegram-secret-token, ed25519, ecdsa-p256-sha256, custom)");
        };
        return base.with(options);
    }

    private SignatureScheme with(Map<String, String> options) {
        String signature = signatureHeader;
        String timestamp = timestampHeader;
        String id = idHeader;
        String signed = template;
        Encoding enc = encoding;
        String pre = prefix;
        Format fmt = format;
        SecretFormat secret = secretFormat;
        Duration tol = tolerance;
        Algorithm alg = algorithm;
        for (Map.Entry<String, String> option : options.entrySet()) {
            String value = option.getValue();
            switch (option.getKey()) {
                case "signature-header" -> signature = value;
                case "timestamp-header" -> timestamp = value.isEmpty() ? null : value;
                case "id-header" -> id = value.isEmpty() ? null : value;
                case "template" -> signed = value;
                case "encoding" -> enc = Encoding.valueOf(value.toUpperCase(Locale.ROOT));
                case "prefix" -> pre = value;
                case "format" -> fmt = Format.valueOf(value.toUpperCase(Locale.ROOT));
                case "secret-format" -> secret = SecretFormat.valueOf(value.toUpperCase(Locale.ROOT));
                case "tolerance-seconds" -> tol = Duration.ofSeconds(Long.parseLong(value));
                case "algorithm" -> alg = Algorithm.ofSpec(value);
                default -> throw new IllegalArgumentException("signature scheme " + name + ": unknown option '" + option.getKey() + "'");
            }
        }
        return new SignatureScheme(name, fmt, signature, timestamp, id, signed, enc, pre, secret, tol, alg);
    }

    /** This scheme with another tolerance (configured per route). */
    public SignatureScheme withTolerance(Duration newTolerance) {
        return new SignatureScheme(name, format, signatureHeader, timestampHeader, idHeader, template, encoding, prefix,
                secretFormat, newTolerance, algorithm);
    }
}
