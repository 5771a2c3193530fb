package io.chatintake.work;

import java.time.Duration;

/**
 * How long a process's next lane claim lets work gather after the previous one took some.
 * <p>
 * After a thin claim the next one lets more arrive first: deliveries come one at a time, and one
 * claim and one commit for what came in the meantime cost far less than one each (claiming
 * takes several round trips whatever it finds). After a claim that took plenty (a backlog, batches) the
 * next one goes at once: a wait would only idle the workers.
 * <p>
 * The wait can adapt to the load between {@code work.gather-millis} and {@code work.gather-max-millis}
 * (equal as shipped: a fixed wait): a busy stream over many chats (a claim of several chats' short
 * runs) doubles it, so each chat's run grows instead of each visit paying its lane writes for two
 * or three items; work arriving one item at a time halves it back. That buys throughput only when
 * the machine is saturated and costs latency whenever it is not, hence off by default.
 * <p>
 * A claim that took as many lanes as one claim may leaves others due now: the next goes at once,
 * whatever it took. Without that, a steady stream over many chats falls behind: each claim of the
 * most chats waits before the next, and a growing wait makes each chat wait many waits.
 */
final class Gathering {
    /** A claim that took fewer items than this is thin: work is arriving one item at a time. */
    static final int FEW_ITEMS = 10;
    /**
     * So is a claim of several chats' runs averaging fewer items than this: the chats are visited
     * faster than their items arrive, and each visit costs lane writes that a longer run would share.
     */
    static final int FEW_PER_RUN = 4;

    private final long least;
    private final long most;
    private long wait;

    Gathering(Duration least, Duration most) {
        this.least = least.toNanos();
        this.most = Math.max(this.least, most.toNanos());
        this.wait = this.least;
    }

    /**
     * @param full whether the claim looked at as many lanes as one claim may (more may be due)
     * @return nanoseconds the next claim waits after one that took {@code items} (at least one) in {@code runs} runs
     */
    long after(int items, int runs, boolean full) {
        if (full) {
            return 0;
        }
        if (items < FEW_ITEMS) {
            wait = Math.max(least, wait / 2);
            return wait;
        }
        if (runs > 1 && items < FEW_PER_RUN * runs) {
            wait = Math.min(most, wait * 2);
            return wait;
        }
        return 0;
    }

    /** The wait, e.g. "20 ms", or the range it moves in, e.g. "20-80 ms". */
    @Override
    public String toString() {
        return (least == most ? "" : least / 1_000_000 + "-") + most / 1_000_000 + " ms";
    }
}
