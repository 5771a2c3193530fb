package io.chatintake.ops;

import io.chatintake.config.Secret;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Optional;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Who may use the status page, without state on the server: a session is a random id and its
 * expiry, signed with a key derived from the status token (HMAC-SHA256), so every replica that
 * knows the token accepts it and nothing has to be stored or shared. The session's CSRF token is
 * the same MAC over another label: a page can carry it, it reveals neither the status token nor the
 * session cookie, and only a page served to this session has it.
 */
final class StatusSession {
    static final String COOKIE = "chat_intake_status";
    static final String OPERATOR_COOKIE = "chat_intake_operator";
    static final Duration LIFETIME = Duration.ofHours(12);
    private static final int MAX_NAME = 80;
    private static final SecureRandom RANDOM = new SecureRandom();

    private final byte[] key;
    private final Clock clock;

    StatusSession(Secret token, Clock clock) {
        // A key of its own: a MAC keyed with the token itself would be one more thing computed from the raw token.
        this.key = mac("chat-intake status session key".getBytes(StandardCharsets.UTF_8), token.reveal());
        this.clock = clock;
    }

    /** A new session's cookie value: {@code <id>.<expiry epoch seconds>.<mac>}. */
    String open() {
        byte[] id = new byte[16];
        RANDOM.nextBytes(id);
        String body = HexFormat.of().formatHex(id) + "." + clock.instant().plus(LIFETIME).getEpochSecond();
        return body + "." + hex(mac(key, "session:" + body));
    }

    /** The session a cookie names, if it is one this page signed and it has not expired. */
    Optional<String> verify(String cookie) {
        if (cookie == null) {
            return Optional.empty();
        }
        int lastDot = cookie.lastIndexOf('.');
        int firstDot = cookie.indexOf('.');
        if (firstDot <= 0 || lastDot == firstDot) {
            return Optional.empty();
        }
        String body = cookie.substring(0, lastDot);
        if (!equal(cookie.substring(lastDot + 1), hex(mac(key, "session:" + body)))) {
            return Optional.empty();
        }
        try {
            long expires = Long.parseLong(body.substring(firstDot + 1));
            return expires > clock.instant().getEpochSecond() ? Optional.of(body) : Optional.empty();
        } catch (NumberFormatException e) {
            return Optional.empty();
        }
    }

    String csrf(String session) {
        return hex(mac(key, "csrf:" + session));
    }

    boolean csrfMatches(String session, String offered) {
        return offered != null && equal(offered, csrf(session));
    }

    /** @param secure whether the browser came over TLS: then the cookie never travels without it */
    static String sessionCookie(String value, boolean secure) {
        return cookie(COOKIE, value, LIFETIME, secure);
    }

    /** Replaces the session cookie with one already expired: the browser forgets it. */
    static String endedSessionCookie(boolean secure) {
        return cookie(COOKIE, "", Duration.ZERO, secure);
    }

    static String operatorCookie(String name, boolean secure) {
        return cookie(OPERATOR_COOKIE, URLEncoder.encode(name, StandardCharsets.UTF_8), Duration.ofDays(365), secure);
    }

    private static String cookie(String name, String value, Duration maxAge, boolean secure) {
        return name + "=" + value + "; Path=" + StatusPage.PATH + "; HttpOnly; SameSite=Strict; Max-Age=" + maxAge.toSeconds()
                + (secure ? "; Secure" : "");
    }

    /** A name as typed: trimmed, one line, at most {@value #MAX_NAME} characters; empty when nothing usable is left. */
    static String cleanName(String typed) {
        if (typed == null) {
            return "";
        }
        String name = typed.replaceAll("\\p{Cntrl}", " ").trim();
        return name.length() <= MAX_NAME ? name : name.substring(0, MAX_NAME);
    }

    /** A cookie's value from a Cookie header, or null. */
    static String cookie(String header, String name) {
        if (header == null) {
            return null;
        }
        for (String part : header.split(";")) {
            String pair = part.trim();
            if (pair.startsWith(name + "=")) {
                String value = pair.substring(name.length() + 1);
                return name.equals(OPERATOR_COOKIE) ? decodedName(value) : value;
            }
        }
        return null;
    }

    private static String decodedName(String value) {
        try {
            return cleanName(URLDecoder.decode(value, StandardCharsets.UTF_8));
        } catch (IllegalArgumentException e) {
            return "";
        }
    }

    private static boolean equal(String a, String b) {
        return MessageDigest.isEqual(a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8));
    }

    private static String hex(byte[] bytes) {
        return HexFormat.of().formatHex(bytes);
    }

    private static byte[] mac(byte[] key, String text) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            return mac.doFinal(text.getBytes(StandardCharsets.UTF_8));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("every JVM has HmacSHA256", e);
        }
    }
}
