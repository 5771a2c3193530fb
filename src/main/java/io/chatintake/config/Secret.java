package io.chatintake.config;

import java.util.Objects;

/**
 * A value that must never reach a log line, a URI, a metric label or an error message.
 * {@link #toString()} is redacted so that accidental string concatenation stays safe;
 * code that really needs the value calls {@link #reveal()}, which is easy to grep for.
 */
public final class Secret {
    private static final String REDACTED = "[redacted]";
    private final String value;

    private Secret(String value) {
        this.value = Objects.requireNonNull(value);
    }

    public static Secret of(String value) {
        return new Secret(value);
    }

    public String reveal() {
        return value;
    }

    public boolean isEmpty() {
        return value.isEmpty();
    }

    @Override
    public String toString() {
        return REDACTED;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Secret other && value.equals(other.value);
    }

    @Override
    public int hashCode() {
        return value.hashCode();
    }
}
