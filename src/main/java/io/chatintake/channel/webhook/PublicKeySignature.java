package io.chatintake.channel.webhook;

import io.chatintake.config.Secret;
import java.io.ByteArrayInputStream;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.SignatureException;
import java.security.interfaces.ECPublicKey;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.X509EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.regex.Pattern;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.component.crypto.DigitalSignatureConfiguration;
import org.apache.camel.component.crypto.DigitalSignatureConstants;
import org.apache.camel.component.crypto.processor.SigningProcessor;
import org.apache.camel.component.crypto.processor.VerifyingProcessor;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;

/**
 * Signatures checked with public keys (Ed25519, ECDSA P-256), through camel-crypto's
 * digital-signature processors, the ones behind {@code crypto:verify} and {@code crypto:sign}.
 * Keys are parsed once, when the channel starts, so a key that does not parse is one line then,
 * never an exception at the first delivery. Each check runs on an exchange of its own: the
 * processors keep no state between exchanges, so deliveries are checked concurrently.
 */
final class PublicKeySignature {
    /** X.509 SubjectPublicKeyInfo before a raw 32-byte Ed25519 key (OID 1.3.101.112): Java's KeyFactory reads only the wrapped form. */
    private static final byte[] ED25519_SPKI_PREFIX = HexFormat.of().parseHex("302a300506032b6570032100");
    /** PKCS#8 before a raw 32-byte Ed25519 private key (its seed). */
    private static final byte[] ED25519_PKCS8_PREFIX = HexFormat.of().parseHex("302e020100300506032b657004220420");
    /** X.509 SubjectPublicKeyInfo before an uncompressed P-256 point (04 || x || y). */
    private static final byte[] P256_SPKI_PREFIX = HexFormat.of().parseHex("3059301306072a8648ce3d020106082a8648ce3d030107034200");
    /** ECDSA as r || s, 32 bytes each (JWS, WebCrypto), rather than DER. */
    private static final String ECDSA_RAW = "SHA256withECDSAinP1363Format";
    private static final int ECDSA_RAW_LENGTH = 64;
    private static final Pattern HEX = Pattern.compile("(?i)[0-9a-f]+");
    /**
     * Only the exchanges' type converter is used (the processors read the body as a stream): a
     * context initialised but never started, shared by every verifier.
     */
    private static final CamelContext EXCHANGES = exchangeContext();

    private final SignatureScheme.Algorithm algorithm;
    private final List<Check> checks;

    /** One key's processors: the scheme's, and for ECDSA the one for raw r || s signatures. */
    private record Check(VerifyingProcessor processor, VerifyingProcessor raw) {
    }

    private PublicKeySignature(SignatureScheme.Algorithm algorithm, List<Check> checks) {
        this.algorithm = algorithm;
        this.checks = checks;
    }

    /**
     * @param keys public keys, each hex (Ed25519: the raw 32 bytes; P-256: the 65-byte point),
     *             base64 or PEM X.509 SubjectPublicKeyInfo
     * @throws IllegalArgumentException naming which key does not parse (never quoting it)
     */
    static PublicKeySignature verifier(SignatureScheme scheme, List<Secret> keys) {
        SignatureScheme.Algorithm algorithm = scheme.algorithm();
        List<Check> checks = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            PublicKey key = publicKey(scheme, keys.get(i), i + 1, keys.size());
            checks.add(new Check(verifying(algorithm.javaName(), key),
                    algorithm == SignatureScheme.Algorithm.ECDSA_P256_SHA256 ? verifying(ECDSA_RAW, key) : null));
        }
        return new PublicKeySignature(algorithm, List.copyOf(checks));
    }

    /** Whether any key verifies {@code signature} over {@code signed}. */
    boolean verifies(byte[] signed, byte[] signature) {
        for (Check check : checks) {
            VerifyingProcessor processor = check.raw() != null && signature.length == ECDSA_RAW_LENGTH ? check.raw() : check.processor();
            if (verifies(processor, signed, signature)) {
                return true;
            }
        }
        return false;
    }

    private static boolean verifies(VerifyingProcessor processor, byte[] signed, byte[] signature) {
        Exchange exchange = exchange(signed);
        exchange.getIn().setHeader(DigitalSignatureConstants.SIGNATURE, Base64.getEncoder().encodeToString(signature));
        try {
            processor.process(exchange);
            return true;
        } catch (SignatureException | IllegalArgumentException e) {
            // Not this key's signature, or not a signature of this algorithm at all (wrong length, bad encoding).
            return false;
        } catch (Exception e) {
            throw new IllegalStateException("signature check failed: " + e.getClass().getSimpleName(), e);
        }
    }

    /**
     * Signs as a sender holding the private key would (tests, demo, benchmarks): {@code privateKey}
     * is hex of Ed25519's 32-byte seed, or base64/PEM PKCS#8.
     */
    static byte[] sign(SignatureScheme scheme, Secret privateKey, byte[] signed) {
        DigitalSignatureConfiguration config = new DigitalSignatureConfiguration();
        config.setAlgorithm(scheme.algorithm().javaName());
        config.setPrivateKey(privateKey(scheme, privateKey));
        Exchange exchange = exchange(signed);
        try {
            new SigningProcessor(config).process(exchange);
        } catch (Exception e) {
            throw new IllegalStateException("signature scheme " + scheme.name() + ": signing failed (" + e.getClass().getSimpleName() + ")", e);
        }
        return Base64.getDecoder().decode(exchange.getMessage().getHeader(DigitalSignatureConstants.SIGNATURE, String.class));
    }

    private static VerifyingProcessor verifying(String javaName, PublicKey key) {
        DigitalSignatureConfiguration config = new DigitalSignatureConfiguration();
        config.setAlgorithm(javaName);
        config.setPublicKey(key);
        return new VerifyingProcessor(config);
    }

    private static CamelContext exchangeContext() {
        CamelContext context = new DefaultCamelContext(false);
        context.init();
        return context;
    }

    private static Exchange exchange(byte[] signed) {
        Exchange exchange = new DefaultExchange(EXCHANGES);
        exchange.getIn().setBody(new ByteArrayInputStream(signed));
        return exchange;
    }

    private static PublicKey publicKey(SignatureScheme scheme, Secret key, int position, int count) {
        SignatureScheme.Algorithm algorithm = scheme.algorithm();
        try {
            byte[] bytes = decode(key.reveal());
            if (algorithm == SignatureScheme.Algorithm.ED25519 && bytes.length == 32) {
                bytes = concat(ED25519_SPKI_PREFIX, bytes);
            } else if (algorithm == SignatureScheme.Algorithm.ECDSA_P256_SHA256 && bytes.length == 65 && bytes[0] == 4) {
                bytes = concat(P256_SPKI_PREFIX, bytes);
            }
            PublicKey parsed = KeyFactory.getInstance(keyFactory(algorithm)).generatePublic(new X509EncodedKeySpec(bytes));
            if (algorithm == SignatureScheme.Algorithm.ECDSA_P256_SHA256
                    && ((ECPublicKey) parsed).getParams().getCurve().getField().getFieldSize() != 256) {
                throw new IllegalArgumentException("not a P-256 key");
            }
            return parsed;
        } catch (GeneralSecurityException | IllegalArgumentException | ClassCastException e) {
            // The message names the key by position: it must not quote it, even a public one is configuration.
            throw new IllegalArgumentException("signature scheme " + scheme.name() + ": public key " + position + " of " + count
                    + " is not an " + algorithm.spec() + " public key (" + expected(algorithm) + ")");
        }
    }

    private static PrivateKey privateKey(SignatureScheme scheme, Secret key) {
        SignatureScheme.Algorithm algorithm = scheme.algorithm();
        try {
            byte[] bytes = decode(key.reveal());
            if (algorithm == SignatureScheme.Algorithm.ED25519 && bytes.length == 32) {
                bytes = concat(ED25519_PKCS8_PREFIX, bytes);
            }
            return KeyFactory.getInstance(keyFactory(algorithm)).generatePrivate(new PKCS8EncodedKeySpec(bytes));
        } catch (GeneralSecurityException | IllegalArgumentException e) {
            throw new IllegalArgumentException("signature scheme " + scheme.name() + ": the private key is not an " + algorithm.spec()
                    + " PKCS#8 key");
        }
    }

    private static String keyFactory(SignatureScheme.Algorithm algorithm) {
        return algorithm == SignatureScheme.Algorithm.ED25519 ? "Ed25519" : "EC";
    }

    private static String expected(SignatureScheme.Algorithm algorithm) {
        return algorithm == SignatureScheme.Algorithm.ED25519
                ? "expected 64 hex characters, or base64/PEM X.509"
                : "expected base64/PEM X.509, or 130 hex characters of the uncompressed point";
    }

    /** Hex when it is hex of whole bytes, else base64 (PEM armour and line breaks removed). */
    private static byte[] decode(String text) {
        String value = text.replaceAll("-----[A-Z ]+-----", "").replaceAll("\\s", "");
        if (value.length() % 2 == 0 && HEX.matcher(value).matches()) {
            return HexFormat.of().parseHex(value);
        }
        return Base64.getDecoder().decode(value);
    }

    private static byte[] concat(byte[] prefix, byte[] key) {
        byte[] all = new byte[prefix.length + key.length];
        System.arraycopy(prefix, 0, all, 0, prefix.length);
        System.arraycopy(key, 0, all, prefix.length, key.length);
        return all;
    }

    @Override
    public String toString() {
        return "PublicKeySignature[" + algorithm.spec() + ", " + checks.size() + " key(s)]";
    }
}
