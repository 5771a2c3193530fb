package io.chatintake.channel.webhook;

import java.time.DateTimeException;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;

/**
 * RFC 3339 timestamps as providers send them ({@code 2026-07-01T09:15:00Z},
 * {@code 2026-07-01T09:15:00.123+02:00}). Read by hand when the text has exactly that shape:
 * every delivery parses two or three (signature, event and message times), and this is an order
 * of magnitude cheaper than {@link OffsetDateTime#parse}. Any other shape goes to
 * {@link OffsetDateTime#parse}, so what is accepted and refused does not change; fields out of
 * range throw {@link DateTimeException} either way.
 */
final class Rfc3339Timestamp {
    private Rfc3339Timestamp() {
    }

    /** @param iso upper case, 'T' between date and time */
    static Instant parse(String iso) {
        Instant read = readCommonShape(iso);
        return read != null ? read : OffsetDateTime.parse(iso).toInstant();
    }

    /** yyyy-MM-ddTHH:mm:ss, an optional fraction of 1-9 digits, then Z or ±HH:mm; null for any other shape. */
    private static Instant readCommonShape(String s) {
        int n = s.length();
        if (n < 20 || s.charAt(4) != '-' || s.charAt(7) != '-' || s.charAt(10) != 'T' || s.charAt(13) != ':' || s.charAt(16) != ':') {
            return null;
        }
        int year = digits(s, 0, 4);
        int month = digits(s, 5, 2);
        int day = digits(s, 8, 2);
        int hour = digits(s, 11, 2);
        int minute = digits(s, 14, 2);
        int second = digits(s, 17, 2);
        if ((year | month | day | hour | minute | second) < 0) {
            return null;
        }
        int at = 19;
        int nanos = 0;
        if (s.charAt(at) == '.') {
            int start = ++at;
            while (at < n && at - start < 9 && isDigit(s.charAt(at))) {
                nanos = nanos * 10 + (s.charAt(at++) - '0');
            }
            if (at == start || (at < n && isDigit(s.charAt(at)))) {
                return null;
            }
            for (int scale = at - start; scale < 9; scale++) {
                nanos *= 10;
            }
        }
        ZoneOffset offset;
        if (at == n - 1 && s.charAt(at) == 'Z') {
            offset = ZoneOffset.UTC;
        } else if (at == n - 6 && (s.charAt(at) == '+' || s.charAt(at) == '-') && s.charAt(at + 3) == ':') {
            int hours = digits(s, at + 1, 2);
            int minutes = digits(s, at + 4, 2);
            if ((hours | minutes) < 0) {
                return null;
            }
            int sign = s.charAt(at) == '-' ? -1 : 1;
            offset = ZoneOffset.ofHoursMinutes(sign * hours, sign * minutes);
        } else {
            return null;
        }
        return LocalDateTime.of(year, month, day, hour, minute, second, nanos).toInstant(offset);
    }

    /** The value of {@code length} decimal digits at {@code from}; -1 when one of them is not a digit. */
    private static int digits(String s, int from, int length) {
        int value = 0;
        for (int i = from; i < from + length; i++) {
            char c = s.charAt(i);
            if (!isDigit(c)) {
                return -1;
            }
            value = value * 10 + (c - '0');
        }
        return value;
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }
}
