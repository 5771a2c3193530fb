package io.chatintake.work;

/** How the dispatcher runs one kind of work: in order per conversation or not, attempts before parking, backoff. */
record KindRules(boolean ordered, int maxAttempts, Backoff backoff) {
    @Override
    public String toString() {
        return (ordered ? "in order per conversation" : "in any order") + ", at most " + maxAttempts + " attempts, then parked";
    }
}
