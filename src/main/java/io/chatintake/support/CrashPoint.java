package io.chatintake.support;

import java.util.Objects;

/**
 * Named places where acceptance tests make the process die on purpose, as a power cut would:
 * {@code CHAT_INTAKE_TEST_CRASH_AT=<name>} (or the system property {@code chat-intake.test.crash-at})
 * halts the JVM there, without shutdown hooks. Unset, a crash point does nothing.
 */
public final class CrashPoint {
    public static final String TELEGRAM_AFTER_RECEIVE = "telegram.after-receive";
    public static final String TELEGRAM_DURING_TRANSACTION = "telegram.during-transaction";
    public static final String TELEGRAM_AFTER_COMMIT = "telegram.after-commit";
    /** A polled batch and its offset are committed; its work items and album children are about to be derived, not committed yet. */
    public static final String TELEGRAM_BEFORE_DERIVATION = "telegram.before-derivation";
    /** A webhook delivery's events are committed; no answer sent, nothing derived from them yet. */
    public static final String WEBHOOK_AFTER_COMMIT = "webhook.after-commit";
    /** Webhook events' children, listeners' rows and work items are written in the deriving transaction, not committed yet. */
    public static final String WEBHOOK_DURING_DERIVATION = "webhook.during-derivation";
    /** An album's group is removed from the aggregation repository (and kept as completed); its decision is not recorded yet. */
    public static final String ALBUM_AFTER_GROUP_REMOVED = "album.after-group-removed";

    private static final String ARMED = Objects.requireNonNullElse(System.getProperty("chat-intake.test.crash-at"),
            Objects.requireNonNullElse(System.getenv("CHAT_INTAKE_TEST_CRASH_AT"), ""));

    private CrashPoint() {
    }

    public static void reach(String name) {
        if (ARMED.equals(name)) {
            System.out.println("crash point " + name + " reached: halting the JVM");
            System.out.flush();
            Runtime.getRuntime().halt(137);
        }
    }
}
