package io.chatintake.config;

import java.util.Map;
import java.util.Optional;

/**
 * Configuration keys that were renamed (units spelled {@code -millis} or {@code -seconds}), old
 * name to new. A configuration file or environment that still uses an old name keeps working: its
 * value is the new key's unless the new key is set too, and the start says so once.
 */
public final class RenamedKeys {
    private static final Map<String, String> OLD_TO_NEW = Map.of(
            "unifyport.statement-timeout-ms", "unifyport.statement-timeout-millis");

    private RenamedKeys() {
    }

    public static Map<String, String> oldToNew() {
        return OLD_TO_NEW;
    }

    /** The old key a renamed key had, if it had one. */
    static Optional<String> oldNameOf(String key) {
        return OLD_TO_NEW.entrySet().stream().filter(e -> e.getValue().equals(key)).map(Map.Entry::getKey).findFirst();
    }
}
