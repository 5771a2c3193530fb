package io.chatintake.channel.webhook;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.chatintake.channel.webhook.SignatureVerifier.Reason;
import io.chatintake.config.Secret;
import java.nio.charset.StandardCharsets;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.Signature;
import java.security.spec.ECGenParameterSpec;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** The public-key schemes, ed25519 and ecdsa-p256-sha256, through camel-crypto's signer and verifier. */
class PublicKeySchemesTest {
    /** RFC 8032, section 7.1, TEST 1's key pair: the fixed test key Discord-style deliveries are signed with. */
    static final String RFC8032_SEED_1 = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
    static final String RFC8032_PUBLIC_1 = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
    /** RFC 8032, section 7.1, TEST 2: a published key pair, message (one byte, 0x72) and signature. */
    private static final String RFC8032_SEED_2 = "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb";
    private static final String RFC8032_PUBLIC_2 = "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c";
    private static final String RFC8032_SIGNATURE_2 = "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
            + "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00";
    private static final Instant NOW = Instant.ofEpochSecond(1_765_000_000L);
    private static final byte[] INTERACTION = "{\"id\":\"1180000000000000001\",\"type\":2,\"token\":\"aW50ZXJhY3Rpb24\"}"
            .getBytes(StandardCharsets.UTF_8);

    @Test
    void rfc8032sPublishedSignatureIsVerifiedAndAFlippedBitIsNot() {
        SignatureScheme bodyOnly = SignatureScheme.parse("ed25519;timestamp-header=;template={body}");
        SignatureVerifier second = new SignatureVerifier(bodyOnly, List.of(Secret.of(RFC8032_PUBLIC_2)));
        byte[] message = {0x72};
        assertThat(second.verify(Map.of("X-Signature-Ed25519", RFC8032_SIGNATURE_2)::get, message, NOW).verified()).isTrue();
        assertThat(second.verify(Map.of("X-Signature-Ed25519", RFC8032_SIGNATURE_2)::get, new byte[] {0x73}, NOW).reason())
                .isEqualTo(Reason.BAD_SIGNATURE);
        assertThat(second.verify(Map.of("X-Signature-Ed25519", flipLastBit(RFC8032_SIGNATURE_2))::get, message, NOW).reason())
                .isEqualTo(Reason.BAD_SIGNATURE);
        // The sender's side signs exactly as RFC 8032 does.
        assertThat(SignatureVerifier.signatureHeaderValue(bodyOnly, Secret.of(RFC8032_SEED_2), null, null, message))
                .isEqualTo(RFC8032_SIGNATURE_2);
    }

    @Test
    void discordsLayoutSignsTheTimestampAndTheRawBodyAndOneBitAnywhereIsRefused() {
        SignatureScheme discord = SignatureScheme.parse("ed25519");
        SignatureVerifier verifier = new SignatureVerifier(discord, List.of(Secret.of(RFC8032_PUBLIC_1)));
        String timestamp = Long.toString(NOW.getEpochSecond());
        String signature = SignatureVerifier.signatureHeaderValue(discord, Secret.of(RFC8032_SEED_1), null, timestamp, INTERACTION);
        assertThat(verifier.verify(headers(signature, timestamp)::get, INTERACTION, NOW).verified()).isTrue();

        byte[] body = INTERACTION.clone();
        body[body.length - 3] ^= 1;
        assertThat(verifier.verify(headers(signature, timestamp)::get, body, NOW).reason()).as("body").isEqualTo(Reason.BAD_SIGNATURE);
        // '0' -> '1': one bit, one second later, still within the window.
        String nextSecond = timestamp.substring(0, timestamp.length() - 1) + "1";
        assertThat(verifier.verify(headers(signature, nextSecond)::get, INTERACTION, NOW).reason()).as("timestamp")
                .isEqualTo(Reason.BAD_SIGNATURE);
        assertThat(verifier.verify(headers(flipLastBit(signature), timestamp)::get, INTERACTION, NOW).reason()).as("signature")
                .isEqualTo(Reason.BAD_SIGNATURE);
        assertThat(verifier.verify(headers(signature.toUpperCase(), timestamp)::get, INTERACTION, NOW).verified())
                .as("hex in either case").isTrue();
        assertThat(verifier.verify(headers(signature, null)::get, INTERACTION, NOW).reason()).isEqualTo(Reason.MISSING_TIMESTAMP);
        assertThat(verifier.verify(headers(null, timestamp)::get, INTERACTION, NOW).reason()).isEqualTo(Reason.MISSING_SIGNATURE);
        assertThat(verifier.verify(headers(signature, timestamp)::get, INTERACTION, NOW.plusSeconds(301)).reason())
                .isEqualTo(Reason.STALE_TIMESTAMP);
        assertThat(verifier.verify(headers("zz" + signature.substring(2), timestamp)::get, INTERACTION, NOW).reason())
                .as("not hex").isEqualTo(Reason.BAD_SIGNATURE);
        assertThat(verifier.verify(headers(signature.substring(2), timestamp)::get, INTERACTION, NOW).reason())
                .as("too short").isEqualTo(Reason.BAD_SIGNATURE);
    }

    @Test
    void keysRotateLikeSecretsAndAreReadInEveryFormTheyArePublishedIn() throws Exception {
        KeyPair other = KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
        String x509 = Base64.getEncoder().encodeToString(other.getPublic().getEncoded());
        String pem = "-----BEGIN PUBLIC KEY-----\n" + x509 + "\n-----END PUBLIC KEY-----";
        SignatureVerifier verifier = new SignatureVerifier(SignatureScheme.ed25519(), List.of(Secret.of(pem), Secret.of(RFC8032_PUBLIC_1)));
        String timestamp = Long.toString(NOW.getEpochSecond());
        String byOld = SignatureVerifier.signatureHeaderValue(SignatureScheme.ed25519(), Secret.of(RFC8032_SEED_1), null, timestamp,
                INTERACTION);
        String byNew = SignatureVerifier.signatureHeaderValue(SignatureScheme.ed25519(),
                Secret.of(Base64.getEncoder().encodeToString(other.getPrivate().getEncoded())), null, timestamp, INTERACTION);
        assertThat(verifier.verify(headers(byOld, timestamp)::get, INTERACTION, NOW).verified()).isTrue();
        assertThat(verifier.verify(headers(byNew, timestamp)::get, INTERACTION, NOW).verified()).isTrue();
    }

    @Test
    void aKeyThatDoesNotParseIsNamedByPositionAndNeverQuoted() {
        String bad = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f70751";
        assertThatThrownBy(() -> new SignatureVerifier(SignatureScheme.ed25519(), List.of(Secret.of(RFC8032_PUBLIC_1), Secret.of(bad))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("signature scheme ed25519: public key 2 of 2 is not an ed25519 public key "
                        + "(expected 64 hex characters, or base64/PEM X.509)")
                .hasNoCause();
        assertThatThrownBy(() -> new SignatureVerifier(SignatureScheme.ecdsaP256Sha256(), List.of(Secret.of(RFC8032_PUBLIC_1))))
                .hasMessageContaining("public key 1 of 1 is not an ecdsa-p256-sha256 public key").hasMessageNotContaining(RFC8032_PUBLIC_1);
        assertThatThrownBy(() -> SignatureScheme.parse("ed25519;format=stripe")).hasMessageContaining("needs format single or list");
    }

    @Test
    void anEcdsaP256DeliveryIsVerifiedThroughTheSameSchemeMachinery() throws Exception {
        KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
        generator.initialize(new ECGenParameterSpec("secp256r1"));
        KeyPair pair = generator.generateKeyPair();
        Secret privateKey = Secret.of(Base64.getEncoder().encodeToString(pair.getPrivate().getEncoded()));
        SignatureScheme scheme = SignatureScheme.parse("ecdsa-p256-sha256");
        SignatureVerifier verifier = new SignatureVerifier(scheme,
                List.of(Secret.of(Base64.getEncoder().encodeToString(pair.getPublic().getEncoded()))));
        String timestamp = Long.toString(NOW.getEpochSecond());
        String der = SignatureVerifier.signatureHeaderValue(scheme, privateKey, null, timestamp, INTERACTION);
        assertThat(verifier.verify(ecdsaHeaders(der, timestamp)::get, INTERACTION, NOW).verified()).isTrue();
        byte[] tampered = INTERACTION.clone();
        tampered[5] ^= 1;
        assertThat(verifier.verify(ecdsaHeaders(der, timestamp)::get, tampered, NOW).reason()).isEqualTo(Reason.BAD_SIGNATURE);

        // The same key's signature as r || s (WebCrypto, JWS) is accepted too.
        Signature raw = Signature.getInstance("SHA256withECDSAinP1363Format");
        raw.initSign(pair.getPrivate());
        raw.update((timestamp + new String(INTERACTION, StandardCharsets.UTF_8)).getBytes(StandardCharsets.UTF_8));
        String rs = Base64.getEncoder().encodeToString(raw.sign());
        assertThat(verifier.verify(ecdsaHeaders(rs, timestamp)::get, INTERACTION, NOW).verified()).isTrue();
    }

    /** camel-crypto 4.17 beside Camel 4.18 core: one verifier shared by 16 threads, every answer right. */
    @Test
    void sixteenConcurrentChecksOnOneVerifierAreEachRight() throws Exception {
        SignatureVerifier verifier = new SignatureVerifier(SignatureScheme.ed25519(), List.of(Secret.of(RFC8032_PUBLIC_1)));
        String timestamp = Long.toString(NOW.getEpochSecond());
        int threads = 16;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<Boolean>> results = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                Callable<Boolean> check = () -> {
                    start.await();
                    for (int i = 0; i < 10; i++) {
                        byte[] body = ("{\"id\":\"" + thread + "-" + i + "\",\"type\":2}").getBytes(StandardCharsets.UTF_8);
                        String signature = SignatureVerifier.signatureHeaderValue(SignatureScheme.ed25519(), Secret.of(RFC8032_SEED_1),
                                null, timestamp, body);
                        boolean good = verifier.verify(headers(signature, timestamp)::get, body, NOW).verified();
                        boolean forged = verifier.verify(headers(flipLastBit(signature), timestamp)::get, body, NOW).verified();
                        if (!good || forged) {
                            return false;
                        }
                    }
                    return true;
                };
                results.add(pool.submit(check));
            }
            start.countDown();
            for (Future<Boolean> result : results) {
                assertThat(result.get()).isTrue();
            }
        } finally {
            pool.shutdownNow();
        }
    }

    private static Map<String, String> headers(String signature, String timestamp) {
        Map<String, String> headers = new HashMap<>();
        headers.put("X-Signature-Ed25519", signature);
        headers.put("X-Signature-Timestamp", timestamp);
        return headers;
    }

    private static Map<String, String> ecdsaHeaders(String signature, String timestamp) {
        return Map.of("X-Twilio-Email-Event-Webhook-Signature", signature, "X-Twilio-Email-Event-Webhook-Timestamp", timestamp);
    }

    static String flipLastBit(String hex) {
        byte[] bytes = HexFormat.of().parseHex(hex);
        bytes[bytes.length - 1] ^= 1;
        return HexFormat.of().formatHex(bytes);
    }
}
