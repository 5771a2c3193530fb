package io.chatintake.channel.telegram;

import java.sql.SQLException;
import java.util.concurrent.TimeUnit;

/**
 * The send slots of one bot, a gap apart: {@link #take} reserves the next one if it comes within
 * a wait, else says how far off it is. {@link SharedBotBudget} keeps them in PostgreSQL for every
 * process sending for the bot; {@link #local()} in this process alone (a context without the
 * product's database).
 */
interface BotBudget {
    /**
     * Sends are paced this much under the configured limit: a send goes a little after its slot
     * (a wake-up, the request on its way), and a few late ones followed by punctual ones would
     * otherwise put more than the limit into one second at Telegram.
     */
    double PACE = 0.9;

    /** Nanoseconds between two slots of a bot allowed {@code perSecond} sends, with {@link #PACE}. */
    static long gap(double perSecond) {
        if (perSecond <= 0) {
            throw new IllegalArgumentException("send limits must be positive, got " + perSecond);
        }
        return (long) (TimeUnit.SECONDS.toNanos(1) / (perSecond * PACE));
    }

    /**
     * @return nanoseconds until the slot taken, at most {@code maxWait}; above {@code maxWait}: no
     *         slot was taken, the next free one is that far off
     */
    long take(long gap, long maxWait) throws SQLException;

    static BotBudget local() {
        long[] next = {System.nanoTime()};
        return (gap, maxWait) -> {
            synchronized (next) {
                long now = System.nanoTime();
                long slot = next[0] - now > 0 ? next[0] : now;
                if (slot - now > maxWait) {
                    return slot - now;
                }
                next[0] = slot + gap;
                return slot - now;
            }
        };
    }
}
