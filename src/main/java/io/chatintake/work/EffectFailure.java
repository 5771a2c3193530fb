package io.chatintake.work;

import java.time.Instant;
import java.util.Objects;

/**
 * A guarded action that did not (or not provably) happen, with its {@link EffectOutcome} class.
 * Thrown by producers that can tell (a channel's reply component), by the guardedEffect
 * policy (what its steps threw or declared) and by {@code effectGuard.complete}; the work dispatcher records
 * the effect and the item accordingly. Its message is stored as the item's last error (redacted).
 */
public final class EffectFailure extends Exception {
    private final EffectOutcome outcome;
    private final Instant notBefore;
    private final DeferReason deferral;

    /**
     * @param notBefore the earliest next attempt (a retry-after), or null for plain backoff; with
     *                  {@link EffectOutcome#FAILED} it makes this a {@link DeferReason#RETRY_AFTER} deferral
     */
    public EffectFailure(EffectOutcome outcome, String message, Instant notBefore) {
        this(outcome, message, notBefore, outcome == EffectOutcome.FAILED && notBefore != null ? DeferReason.RETRY_AFTER : null);
    }

    /** Not performed, and not to be tried before {@code until}, for this reason: the attempt does not count. */
    public EffectFailure(DeferReason reason, String message, Instant until) {
        this(EffectOutcome.FAILED, message, Objects.requireNonNull(until), Objects.requireNonNull(reason));
    }

    private EffectFailure(EffectOutcome outcome, String message, Instant notBefore, DeferReason deferral) {
        super(message);
        if (outcome == EffectOutcome.PERFORMED) {
            throw new IllegalArgumentException("a performed effect is not a failure");
        }
        this.outcome = Objects.requireNonNull(outcome);
        this.notBefore = notBefore;
        this.deferral = deferral;
    }

    public EffectOutcome outcome() {
        return outcome;
    }

    /** The earliest time the item may run again, or null. */
    public Instant notBefore() {
        return notBefore;
    }

    /** Why the item waits for {@link #notBefore} without counting an attempt, or null: a failed attempt. */
    public DeferReason deferral() {
        return deferral;
    }
}
