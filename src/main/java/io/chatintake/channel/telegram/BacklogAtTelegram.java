package io.chatintake.channel.telegram;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * Whether Telegram holds a backlog for a bot, judged from its polls: one full batch is a busy
 * moment of steady traffic; {@link #FULL_IN_A_ROW} in a row, each taken as soon as the one before
 * was stored, mean more is waiting there than intake takes in.
 */
final class BacklogAtTelegram {
    static final int FULL_IN_A_ROW = 3;

    private final AtomicInteger fullInARow = new AtomicInteger();

    /** @return whether, after this poll, Telegram holds a backlog */
    boolean afterPoll(boolean fullBatch) {
        if (!fullBatch) {
            fullInARow.set(0);
            return false;
        }
        return fullInARow.incrementAndGet() >= FULL_IN_A_ROW;
    }
}
