package io.chatintake.channel.webhook;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.chatintake.config.Secret;
import io.chatintake.channel.webhook.SignatureVerifier.Reason;
import io.chatintake.channel.webhook.SignatureVerifier.Verification;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/** The verifier as a pure function: published known-answer vectors first, then every way to fail. */
class SignatureVerifierTest {
    private static final byte[] CONTRACT_BODY = bytes("{\"type\":\"message.received\"}");
    /** Computed here, see {@link #customSchemeFromParameters()}. */
    private static final String CUSTOM_VECTOR_BASE64 = "RyIG0k3zTCE5cNeHeN+KckQYTzrOf12PL6L2YrWo36o=";

    // --- UnifyPort: the contract's known-answer vectors (contracts/unifyport-webhook.md) ---

    @Test
    void unifyPortContractVectorRfc3339() {
        Verification result = unifyport("secret_1").verify(headers(
                "X-Device-Timestamp", "2026-06-08T12:34:56Z",
                "X-Device-Signature", "cc29f54eb308510c1310b2f2940d5dd57019b2a411753d2c3949d08834af3f7a"),
                CONTRACT_BODY, Instant.parse("2026-06-08T12:35:00Z"));
        assertThat(result.verified()).isTrue();
    }

    @Test
    void unifyPortContractVectorUnixSeconds() {
        Verification result = unifyport("secret_1").verify(headers(
                "X-Device-Timestamp", "1716800000",
                "X-Device-Signature", "fce0d986263ea0d961d4d349602f8eb7885f96b75be8ceb0df61bb1a93aa61d3"),
                CONTRACT_BODY, Instant.ofEpochSecond(1716800000L - 299));
        assertThat(result.verified()).isTrue();
    }

    @Test
    void theSignerReproducesTheContractVectors() {
        assertThat(SignatureVerifier.signatureHeaderValue(SignatureScheme.unifyport(), Secret.of("secret_1"), null,
                "2026-06-08T12:34:56Z", CONTRACT_BODY))
                .isEqualTo("cc29f54eb308510c1310b2f2940d5dd57019b2a411753d2c3949d08834af3f7a");
        assertThat(SignatureVerifier.signatureHeaderValue(SignatureScheme.unifyport(), Secret.of("secret_1"), null,
                "1716800000", CONTRACT_BODY))
                .isEqualTo("fce0d986263ea0d961d4d349602f8eb7885f96b75be8ceb0df61bb1a93aa61d3");
    }

    @Test
    void theSlackLineAndMetaPresetsAcceptTheirProvidersPublishedExamples() {
        // Slack's "Verifying requests from Slack" example, checked at its own time.
        String slackBody = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V"
                + "&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2F"
                + "hooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN"
                + "&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
        Function<String, String> slackHeaders = headers("X-Slack-Request-Timestamp", "1531420618",
                "X-Slack-Signature", "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503");
        SignatureVerifier slack = new SignatureVerifier(SignatureScheme.parse("slack"), List.of(Secret.of("8f742231b10e8888abcd99yyyzzz85a5")));
        assertThat(slack.verify(slackHeaders, bytes(slackBody), Instant.ofEpochSecond(1531420618)).verified()).isTrue();
        assertThat(slack.verify(slackHeaders, bytes(slackBody), Instant.ofEpochSecond(1531420618 + 301)).reason())
                .isEqualTo(Reason.STALE_TIMESTAMP);
        // LINE's SDK test vector (line-bot-sdk-nodejs).
        SignatureVerifier line = new SignatureVerifier(SignatureScheme.parse("line"), List.of(Secret.of("test_secret")));
        assertThat(line.verify(headers("X-Line-Signature", "t7Hn4ZDHqs6e+wdvI5TyQIvzie0DmMUmuXEBqyyE/tM="), bytes("{\"hello\":\"world\"}"),
                Instant.now()).verified()).isTrue();
        // Meta signs as GitHub does; GitHub's "Validating webhook deliveries" example.
        SignatureVerifier meta = new SignatureVerifier(SignatureScheme.parse("meta"), List.of(Secret.of("It's a Secret to Everybody")));
        assertThat(meta.verify(headers("X-Hub-Signature-256", "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"),
                bytes("Hello, World!"), Instant.now()).verified()).isTrue();
    }

    @Test
    void theTimestampIsSignedExactlyAsReceived() {
        // Same instant, written differently: the signature covers the text, not the time.
        Verification result = unifyport("secret_1").verify(headers(
                "X-Device-Timestamp", "2026-06-08T12:34:56+00:00",
                "X-Device-Signature", "cc29f54eb308510c1310b2f2940d5dd57019b2a411753d2c3949d08834af3f7a"),
                CONTRACT_BODY, Instant.parse("2026-06-08T12:35:00Z"));
        assertThat(result.reason()).isEqualTo(Reason.BAD_SIGNATURE);
    }

    @Test
    void aTamperedBodyIsRejected() {
        Verification result = unifyport("secret_1").verify(headers(
                "X-Device-Timestamp", "2026-06-08T12:34:56Z",
                "X-Device-Signature", "cc29f54eb308510c1310b2f2940d5dd57019b2a411753d2c3949d08834af3f7a"),
                bytes("{\"type\":\"message.deleted\"}"), Instant.parse("2026-06-08T12:35:00Z"));
        assertThat(result.reason()).isEqualTo(Reason.BAD_SIGNATURE);
    }

    @Test
    void aWrongSecretIsRejected() {
        Verification result = unifyport("secret_2").verify(headers(
                "X-Device-Timestamp", "2026-06-08T12:34:56Z",
                "X-Device-Signature", "cc29f54eb308510c1310b2f2940d5dd57019b2a411753d2c3949d08834af3f7a"),
                CONTRACT_BODY, Instant.parse("2026-06-08T12:35:00Z"));
        assertThat(result.reason()).isEqualTo(Reason.BAD_SIGNATURE);
    }

    @Test
    void duringRotationOldAndNewSecretsAreAcceptedAndARemovedOneIsNot() {
        Instant now = Instant.parse("2026-06-08T12:35:00Z");
        SignatureVerifier rotating = unifyport("secret_old", "secret_1");
        assertThat(rotating.verify(signedUnifyPort("secret_old", "2026-06-08T12:34:56Z"), CONTRACT_BODY, now).verified()).isTrue();
        assertThat(rotating.verify(signedUnifyPort("secret_1", "2026-06-08T12:34:56Z"), CONTRACT_BODY, now).verified()).isTrue();

        SignatureVerifier rotated = unifyport("secret_1");
        assertThat(rotated.verify(signedUnifyPort("secret_old", "2026-06-08T12:34:56Z"), CONTRACT_BODY, now).reason())
                .isEqualTo(Reason.BAD_SIGNATURE);
    }

    @Test
    void freshnessIsBoundedBothWaysInBothForms() {
        Instant now = Instant.parse("2026-06-08T12:34:56Z");
        SignatureVerifier verifier = unifyport("secret_1");
        assertThat(verifier.verify(signedUnifyPort("secret_1", "2026-06-08T12:29:56Z"), CONTRACT_BODY, now).verified()).isTrue();
        assertThat(verifier.verify(signedUnifyPort("secret_1", "2026-06-08T12:29:55Z"), CONTRACT_BODY, now).reason())
                .isEqualTo(Reason.STALE_TIMESTAMP);
        assertThat(verifier.verify(signedUnifyPort("secret_1", "2026-06-08T12:39:57Z"), CONTRACT_BODY, now).reason())
                .isEqualTo(Reason.FUTURE_TIMESTAMP);
        long epoch = now.getEpochSecond();
        assertThat(verifier.verify(signedUnifyPort("secret_1", Long.toString(epoch + 300)), CONTRACT_BODY, now).verified()).isTrue();
        assertThat(verifier.verify(signedUnifyPort("secret_1", Long.toString(epoch - 301)), CONTRACT_BODY, now).reason())
                .isEqualTo(Reason.STALE_TIMESTAMP);
        assertThat(verifier.verify(signedUnifyPort("secret_1", Long.toString(epoch + 301)), CONTRACT_BODY, now).reason())
                .isEqualTo(Reason.FUTURE_TIMESTAMP);
        assertThat(verifier.verify(signedUnifyPort("secret_1", "yesterday"), CONTRACT_BODY, now).reason())
                .isEqualTo(Reason.MALFORMED_TIMESTAMP);
    }

    @Test
    void eachMissingHeaderHasItsReason() {
        Instant now = Instant.parse("2026-06-08T12:35:00Z");
        SignatureVerifier verifier = unifyport("secret_1");
        assertThat(verifier.verify(headers("X-Device-Timestamp", "2026-06-08T12:34:56Z"), CONTRACT_BODY, now).reason())
                .isEqualTo(Reason.MISSING_SIGNATURE);
        assertThat(verifier.verify(headers("X-Device-Signature", "cc29f54eb308510c1310b2f2940d5dd57019b2a411753d2c3949d08834af3f7a"),
                CONTRACT_BODY, now).reason()).isEqualTo(Reason.MISSING_TIMESTAMP);
        assertThat(verifier.verify(headers(), CONTRACT_BODY, now).reason()).isEqualTo(Reason.MISSING_SIGNATURE);
    }

    @Test
    void garbageInTheSignatureHeaderIsABadSignatureNotAnError() {
        Verification result = unifyport("secret_1").verify(headers(
                "X-Device-Timestamp", "2026-06-08T12:34:56Z", "X-Device-Signature", "not hex at all"),
                CONTRACT_BODY, Instant.parse("2026-06-08T12:35:00Z"));
        assertThat(result.reason()).isEqualTo(Reason.BAD_SIGNATURE);
    }

    // --- Standard Webhooks: the vector published by standard-webhooks/standard-webhooks (and Svix) ---

    @Test
    void standardWebhooksPublishedVector() {
        SignatureVerifier verifier = new SignatureVerifier(SignatureScheme.standardWebhooks(),
                List.of(Secret.of("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")));
        byte[] body = bytes("{\"test\": 2432232314}");
        Map<String, String> headers = Map.of("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp", "1614265330",
                // a list: another version's signature first, as senders may send several
                "webhook-signature", "v1,bm9wZQ== v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        assertThat(verifier.verify(lookup(headers), body, Instant.ofEpochSecond(1614265330)).verified()).isTrue();
        assertThat(SignatureVerifier.signatureHeaderValue(SignatureScheme.standardWebhooks(),
                Secret.of("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", body))
                .isEqualTo("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        assertThat(verifier.verify(lookup(Map.of("webhook-timestamp", "1614265330",
                "webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")), body, Instant.ofEpochSecond(1614265330))
                .reason()).isEqualTo(Reason.MISSING_ID);
        assertThat(verifier.verify(lookup(headers), body, Instant.ofEpochSecond(1614265330 + 301)).reason())
                .isEqualTo(Reason.STALE_TIMESTAMP);
    }

    // --- Stripe: no fixed vector is published (stripe-java's WebhookTest computes its own at run
    // time), so this one was computed here with `openssl dgst -sha256 -hmac whsec_test_secret` over
    // "1700000000." + stripe-java's test payload. ---

    @Test
    void stripeStyleVectorComputedWithOpenssl() {
        byte[] body = bytes("{\n  \"id\": \"evt_test_webhook\",\n  \"object\": \"event\"\n}");
        String v1 = "4f1cd7feda9826e746b7d482c4badebb657398df1099e1046364f6196a230150";
        SignatureVerifier verifier = new SignatureVerifier(SignatureScheme.stripeStyle(), List.of(Secret.of("whsec_test_secret")));
        Instant now = Instant.ofEpochSecond(1700000000L + 10);
        assertThat(verifier.verify(headers("Stripe-Signature", "t=1700000000,v1=bad,v1=" + v1 + ",v0=ignored"), body, now)
                .verified()).isTrue();
        assertThat(verifier.verify(headers("Stripe-Signature", "t=1700000000,v1=" + v1), bytes("{}"), now).reason())
                .isEqualTo(Reason.BAD_SIGNATURE);
        assertThat(verifier.verify(headers("Stripe-Signature", "v1=" + v1), body, now).reason())
                .isEqualTo(Reason.MALFORMED_SIGNATURE);
        assertThat(verifier.verify(headers("Stripe-Signature", "t=1700000000,v1=" + v1), body, now.plusSeconds(600)).reason())
                .isEqualTo(Reason.STALE_TIMESTAMP);
    }

    // --- GitHub: the vector from docs.github.com "Validating webhook deliveries" ---

    @Test
    void githubPublishedVector() {
        SignatureVerifier verifier = new SignatureVerifier(SignatureScheme.github(), List.of(Secret.of("It's a Secret to Everybody")));
        String header = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        // No timestamp in this scheme: any "now" is fine.
        assertThat(verifier.verify(headers("X-Hub-Signature-256", header), bytes("Hello, World!"), Instant.EPOCH).verified()).isTrue();
        assertThat(verifier.verify(headers("X-Hub-Signature-256", header), bytes("Hello, World?"), Instant.EPOCH).reason())
                .isEqualTo(Reason.BAD_SIGNATURE);
        assertThat(verifier.verify(headers("X-Hub-Signature-256", header.substring("sha256=".length())), bytes("Hello, World!"),
                Instant.EPOCH).reason()).as("prefix required").isEqualTo(Reason.BAD_SIGNATURE);
    }

    // --- Telegram secret_token: no MAC, no published vector; a constant-time equality ---

    @Test
    void telegramSecretToken() {
        SignatureVerifier verifier = new SignatureVerifier(SignatureScheme.telegramSecretToken(),
                List.of(Secret.of("old-token_A"), Secret.of("new-token_B")));
        assertThat(verifier.verify(headers("X-Telegram-Bot-Api-Secret-Token", "new-token_B"), bytes("{}"), Instant.EPOCH).verified())
                .isTrue();
        assertThat(verifier.verify(headers("X-Telegram-Bot-Api-Secret-Token", "new-token_C"), bytes("{}"), Instant.EPOCH).reason())
                .isEqualTo(Reason.BAD_SIGNATURE);
        assertThat(verifier.verify(headers(), bytes("{}"), Instant.EPOCH).reason()).isEqualTo(Reason.MISSING_SIGNATURE);
    }

    // --- custom: parameters only; vector computed here with
    // printf '%s' '1700000000:{"a":1}' | openssl dgst -sha256 -hmac k -binary | base64 ---

    @Test
    void customSchemeFromParameters() {
        SignatureScheme scheme = SignatureScheme.parse("custom; signature-header=X-Sig; timestamp-header=X-Time;"
                + " template={timestamp}:{body}; encoding=base64; prefix=sha256=; tolerance-seconds=60");
        assertThat(scheme.tolerance()).isEqualTo(Duration.ofSeconds(60));
        SignatureVerifier verifier = new SignatureVerifier(scheme, List.of(Secret.of("k")));
        String signature = SignatureVerifier.signatureHeaderValue(scheme, Secret.of("k"), null, "1700000000", bytes("{\"a\":1}"));
        assertThat(signature).isEqualTo("sha256=" + CUSTOM_VECTOR_BASE64);
        Instant now = Instant.ofEpochSecond(1700000030L);
        assertThat(verifier.verify(headers("X-Sig", signature, "X-Time", "1700000000"), bytes("{\"a\":1}"), now).verified()).isTrue();
        assertThat(verifier.verify(headers("X-Sig", signature, "X-Time", "1700000000"), bytes("{\"a\":1}"), now.plusSeconds(31))
                .reason()).isEqualTo(Reason.STALE_TIMESTAMP);
    }

    @Test
    void schemesAreSelectedByNameWithOverrides() {
        assertThat(SignatureScheme.parse("github; signature-header=X-Gitea-Signature; prefix=").signatureHeader())
                .isEqualTo("X-Gitea-Signature");
        assertThat(SignatureScheme.parse("unifyport")).isEqualTo(SignatureScheme.unifyport());
        assertThatThrownBy(() -> SignatureScheme.parse("rot13")).hasMessageContaining("unknown signature scheme");
        assertThatThrownBy(() -> SignatureScheme.parse("custom; template={timestamp}")).hasMessageContaining("{body}");
        assertThatThrownBy(() -> new SignatureVerifier(SignatureScheme.unifyport(), List.of())).hasMessageContaining("no secret");
    }

    @Test
    void aBadWhsecSecretIsNamedWithoutQuotingIt() {
        assertThatThrownBy(() -> new SignatureVerifier(SignatureScheme.standardWebhooks(), List.of(Secret.of("whsec_%%%not-base64"))))
                .hasMessageNotContaining("%%%not-base64").hasMessageContaining("whsec_<base64>");
    }

    private static SignatureVerifier unifyport(String... secrets) {
        return new SignatureVerifier(SignatureScheme.unifyport(), Arrays.stream(secrets).map(Secret::of).toList());
    }

    private static Function<String, String> signedUnifyPort(String secret, String timestamp) {
        return headers("X-Device-Timestamp", timestamp, "X-Device-Signature",
                SignatureVerifier.signatureHeaderValue(SignatureScheme.unifyport(), Secret.of(secret), null, timestamp, CONTRACT_BODY));
    }

    private static Function<String, String> headers(String... namesAndValues) {
        Map<String, String> map = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        for (int i = 0; i < namesAndValues.length; i += 2) {
            map.put(namesAndValues[i], namesAndValues[i + 1]);
        }
        return map::get;
    }

    private static Function<String, String> lookup(Map<String, String> headers) {
        Map<String, String> map = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        map.putAll(headers);
        return map::get;
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
