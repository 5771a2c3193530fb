package io.chatintake.work;

import java.util.Locale;

/**
 * What became of a guarded external action, as the component that tried it (or the route, with
 * the {@value #HEADER} header) tells the {@link EffectGuard}. The outcome decides what happens to
 * the work item: retried, ended, or parked for a person.
 */
public enum EffectOutcome {
    /** Done: recorded with its result (e.g. a message id), never repeated. */
    PERFORMED,
    /** Definitely not performed (refused, or never sent): recorded failed, the item retried with backoff. */
    FAILED,
    /** Refused for good (bot blocked, chat not found): recorded so, the item ends done, nothing retried. */
    UNDELIVERABLE,
    /** May or may not have happened (timeout or reset after sending, 5xx): parked for reconciliation. */
    AMBIGUOUS;

    /** A step inside a guardedEffect policy (or before {@code effectGuard.complete}) sets this header: performed, failed, undeliverable, ambiguous. */
    public static final String HEADER = EffectConstants.OUTCOME;
    /** With {@code failed}: seconds before the next attempt may run (e.g. the other side's Retry-After). */
    public static final String RETRY_AFTER_HEADER = EffectConstants.RETRY_AFTER_SECONDS;

    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    public static EffectOutcome parse(String text) {
        try {
            return valueOf(text.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(HEADER + " must be performed, failed, undeliverable or ambiguous, got '" + text + "'");
        }
    }
}
