package io.chatintake.channel.telegram;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Keeps one bot's sends within Telegram's limits (about 30 messages a second per bot, one a
 * second per chat, 20 a minute per group), as grammY's throttler and python-telegram-bot's rate
 * limiter do: each send reserves the next free slot of its bot and of its chat and waits for it.
 * A 429 pushes the chat's next slot past retry_after. Shared by every thread sending for the bot.
 */
final class SendLimiter {
    private static final int FORGET_AFTER_CHATS = 10_000;

    private final long botGap;
    private final long chatGap;
    private final long groupGap;
    private long botNext = System.nanoTime();
    private final Map<String, Long> chatNext = new HashMap<>();

    SendLimiter(double perBotPerSecond, double perChatPerSecond, double perGroupPerMinute) {
        this.botGap = gap(perBotPerSecond, 1);
        this.chatGap = gap(perChatPerSecond, 1);
        this.groupGap = gap(perGroupPerMinute, 60);
    }

    private static long gap(double count, long perSeconds) {
        if (count <= 0) {
            throw new IllegalArgumentException("send limits must be positive, got " + count);
        }
        return (long) (TimeUnit.SECONDS.toNanos(perSeconds) / count);
    }

    /** Waits for the next slot of the bot and of this chat ({@code chat} null: the bot's only). */
    void acquire(String chat) throws InterruptedException {
        long slot;
        synchronized (this) {
            long now = System.nanoTime();
            slot = later(now, botNext);
            if (chat != null) {
                slot = later(slot, chatNext.getOrDefault(chat, now));
                chatNext.put(chat, slot + (isGroup(chat) ? groupGap : chatGap));
                if (chatNext.size() > FORGET_AFTER_CHATS) {
                    chatNext.values().removeIf(next -> next - now < 0);
                }
            }
            botNext = slot + botGap;
        }
        long wait = slot - System.nanoTime();
        if (wait > 0) {
            TimeUnit.NANOSECONDS.sleep(wait);
        }
    }

    /** After a 429: nothing more to this chat before retry_after has passed. */
    synchronized void pause(String chat, Duration retryAfter) {
        if (chat != null) {
            long until = System.nanoTime() + retryAfter.toNanos();
            chatNext.merge(chat, until, SendLimiter::later);
        }
    }

    /** Groups, supergroups and channels have negative ids, channels also @names. */
    static boolean isGroup(String chat) {
        return chat.startsWith("-") || chat.startsWith("@");
    }

    private static long later(long a, long b) {
        return a - b >= 0 ? a : b;
    }
}
