package io.chatintake.store;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Optional;

/**
 * Valid JSON that PostgreSQL's {@code jsonb} still refuses: a NUL character (the escape backslash-u0000, which
 * no PostgreSQL text can hold), a UTF-16 surrogate without its partner (a lone backslash-ud83d) and
 * a leading byte-order mark.
 * Jackson accepts both, so without this check one such update or event fails the transaction
 * that stores it, and with it everything stored alongside, on every retry. Callers store such
 * a text raw instead, with the reason.
 * <p>
 * The scan is linear, allocates nothing and needs no round trip, so it runs on every payload.
 */
public final class JsonbText {
    /** The escape backslash-u0000 (or a raw NUL character). */
    public static final String NUL_CHARACTER = "nul_character";
    /** A high surrogate not followed by a low one, or a low one on its own. */
    public static final String LONE_SURROGATE = "lone_surrogate";
    /** The text starts with a byte-order mark: Jackson skips it, jsonb does not. */
    public static final String BYTE_ORDER_MARK = "byte_order_mark";
    /** The bytes are not UTF-8 (e.g. UTF-16 JSON with a byte-order mark, which Jackson reads and PostgreSQL does not). */
    public static final String NOT_UTF8 = "not_utf8";

    private JsonbText() {
    }

    /** Why {@code jsonb} would refuse this JSON text, or empty when it takes it. */
    public static Optional<String> refusal(CharSequence json) {
        int n = json.length();
        if (n > 0 && json.charAt(0) == '\uFEFF') {
            return Optional.of(BYTE_ORDER_MARK);
        }
        for (int i = 0; i < n; i++) {
            char c = json.charAt(i);
            if (c == '\\' && i + 1 < n) {
                if (json.charAt(i + 1) != 'u') {
                    i++; // an escaped character, e.g. a backslash escaping a backslash: what follows is text
                    continue;
                }
                int unit = hex4(json, i + 2);
                if (unit == 0) {
                    return Optional.of(NUL_CHARACTER);
                }
                if (unit >= 0 && Character.isHighSurrogate((char) unit)) {
                    int next = i + 7 < n && json.charAt(i + 6) == '\\' && json.charAt(i + 7) == 'u' ? hex4(json, i + 8) : -1;
                    if (next < 0 || !Character.isLowSurrogate((char) next)) {
                        return Optional.of(LONE_SURROGATE);
                    }
                    i += 11;
                    continue;
                }
                if (unit >= 0 && Character.isLowSurrogate((char) unit)) {
                    return Optional.of(LONE_SURROGATE);
                }
                i += 5;
            } else if (c == 0) {
                return Optional.of(NUL_CHARACTER);
            } else if (Character.isHighSurrogate(c)) {
                if (i + 1 >= n || !Character.isLowSurrogate(json.charAt(i + 1))) {
                    return Optional.of(LONE_SURROGATE);
                }
                i++;
            } else if (Character.isLowSurrogate(c)) {
                return Optional.of(LONE_SURROGATE);
            }
        }
        return Optional.empty();
    }

    /** The bytes as text when they are strictly UTF-8; empty when they are not (nothing replaced). */
    public static Optional<String> utf8(byte[] bytes) {
        try {
            return Optional.of(StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes)).toString());
        } catch (CharacterCodingException e) {
            return Optional.empty();
        }
    }

    /** The value of 4 hex digits at {@code from}, or -1 when they are not there. */
    private static int hex4(CharSequence text, int from) {
        if (from + 4 > text.length()) {
            return -1;
        }
        int value = 0;
        for (int i = from; i < from + 4; i++) {
            int digit = Character.digit(text.charAt(i), 16);
            if (digit < 0) {
                return -1;
            }
            value = value * 16 + digit;
        }
        return value;
    }
}
