package io.chatintake.work;

import java.time.Duration;

/** How the dispatcher runs one kind of work: in order per conversation or not, attempts before parking, backoff. */
public record KindRules(boolean ordered, int maxAttempts, Duration backoffBase, Duration backoffCap) {
    Backoff backoff() {
        return new Backoff(backoffBase, backoffCap);
    }

    @Override
    public String toString() {
        return (ordered ? "in order per conversation" : "in any order") + ", at most " + maxAttempts + " attempts, then parked";
    }
}
