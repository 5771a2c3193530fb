package io.chatintake.work;

import java.time.Instant;
import java.util.Objects;

/**
 * A guarded action that did not (or not provably) happen, with its {@link EffectOutcome} class.
 * Thrown by producers that can tell (the {@code telegram-bot} component) and by
 * {@code effectGuard.complete} when a route set the outcome header; the work dispatcher records
 * the effect and the item accordingly. Its message is stored as the item's last error (redacted).
 */
public final class EffectFailure extends Exception {
    private final EffectOutcome outcome;
    private final Instant notBefore;

    /** @param notBefore the earliest next attempt (a 429's retry_after), or null for plain backoff */
    public EffectFailure(EffectOutcome outcome, String message, Instant notBefore) {
        super(message);
        if (outcome == EffectOutcome.PERFORMED) {
            throw new IllegalArgumentException("a performed effect is not a failure");
        }
        this.outcome = Objects.requireNonNull(outcome);
        this.notBefore = notBefore;
    }

    public EffectOutcome outcome() {
        return outcome;
    }

    /** The earliest time the item may run again, or null. */
    public Instant notBefore() {
        return notBefore;
    }
}
