package io.chatintake.channel.telegram;

import io.chatintake.work.DeferReason;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Keeps one bot's sends within Telegram's limits (about 30 messages a second per bot, one a
 * second per chat, 20 a minute per group) without holding the sending thread for them, as
 * grammY's throttler queues per chat and never blocks the others: a send whose chat is not free
 * yet is deferred to the chat's next slot; a send whose bot has no slot within {@code maxWait} is
 * deferred to the bot's next one. The bot's slots come from a {@link BotBudget}, shared by every
 * process that sends for the bot. A 429 pushes the chat's next slot past retry_after.
 */
final class SendLimiter {
    private static final int FORGET_AFTER_CHATS = 10_000;
    /**
     * How late after its slot a send may still go: half the tenth of each second that
     * {@link BotBudget#PACE} leaves free; the other half is for the request's own way to Telegram.
     */
    private static final long LATE = TimeUnit.MILLISECONDS.toNanos(50);

    /** What a send may do now: go after a short {@code wait} (its bot slot is taken), or wait for {@code until}. */
    record Slot(long waitNanos, DeferReason deferral, Instant until) {
        static Slot go(long waitNanos) {
            return new Slot(Math.max(0, waitNanos), null, null);
        }

        static Slot defer(DeferReason reason, long inNanos) {
            return new Slot(0, reason, Instant.now().plusNanos(Math.max(0, inNanos)));
        }

        boolean deferred() {
            return deferral != null;
        }
    }

    private final BotBudget budget;
    private final long botGap;
    private final long chatGap;
    private final long groupGap;
    private final long maxWait;
    private final Map<String, Long> chatNext = new HashMap<>();

    SendLimiter(double perBotPerSecond, double perChatPerSecond, double perGroupPerMinute, Duration maxWait, BotBudget budget) {
        this.botGap = BotBudget.gap(perBotPerSecond);
        this.chatGap = gap(perChatPerSecond, 1);
        this.groupGap = gap(perGroupPerMinute, 60);
        this.maxWait = maxWait.toNanos();
        this.budget = budget;
    }

    private static long gap(double count, long perSeconds) {
        if (count <= 0) {
            throw new IllegalArgumentException("send limits must be positive, got " + count);
        }
        return (long) (TimeUnit.SECONDS.toNanos(perSeconds) / count);
    }

    /**
     * Takes the bot's next slot for a send to {@code chat} (null: the bot's only) if the chat is
     * free and the bot's slot is within {@code maxWait}; the chat is then held until {@link #sent}.
     */
    Slot take(String chat) throws SQLException {
        if (chat != null) {
            synchronized (this) {
                long wait = chatNext.getOrDefault(chat, System.nanoTime()) - System.nanoTime();
                if (wait > 0) {
                    return Slot.defer(DeferReason.CHAT_LIMIT, wait);
                }
            }
        }
        long wait = budget.take(botGap, maxWait);
        if (wait > maxWait) {
            return Slot.defer(DeferReason.BOT_LIMIT, wait);
        }
        if (chat != null) {
            synchronized (this) {
                long now = System.nanoTime();
                // Held until sent() says when the answer came: no second send to it meanwhile.
                chatNext.put(chat, now + wait + chatGap(chat));
                if (chatNext.size() > FORGET_AFTER_CHATS) {
                    chatNext.values().removeIf(next -> next - now < 0);
                }
            }
        }
        return Slot.go(wait);
    }

    /**
     * Sleeps until the slot {@link #take} gave. A thread that wakes more than {@link #LATE} after
     * it (a machine short of CPU) takes the bot's next slot instead of sending at once: late sends
     * followed by punctual ones would put more than the limit into one second.
     * @return null when the send may go now, else its deferral (the bot has no slot within the wait)
     */
    Slot await(Slot slot) throws SQLException, InterruptedException {
        long due = System.nanoTime() + slot.waitNanos();
        while (true) {
            long wait = due - System.nanoTime();
            if (wait > 0) {
                TimeUnit.NANOSECONDS.sleep(wait);
            }
            if (System.nanoTime() - due <= LATE) {
                return null;
            }
            long again = budget.take(botGap, maxWait);
            if (again > maxWait) {
                return Slot.defer(DeferReason.BOT_LIMIT, again);
            }
            due = System.nanoTime() + again;
        }
    }

    /**
     * The call to {@code chat} came back (whatever its answer): its next slot counts from now, so
     * two sends reach Telegram a full gap apart however long the first one travelled.
     */
    synchronized void sent(String chat) {
        if (chat != null) {
            chatNext.merge(chat, System.nanoTime() + chatGap(chat), SendLimiter::later);
        }
    }

    /** After a 429: nothing more to this chat before retry_after has passed. */
    synchronized void pause(String chat, Duration retryAfter) {
        if (chat != null) {
            chatNext.merge(chat, System.nanoTime() + retryAfter.toNanos(), SendLimiter::later);
        }
    }

    private long chatGap(String chat) {
        return isGroup(chat) ? groupGap : chatGap;
    }

    /** Groups, supergroups and channels have negative ids, channels also @names. */
    static boolean isGroup(String chat) {
        return chat.startsWith("-") || chat.startsWith("@");
    }

    private static long later(long a, long b) {
        return a - b >= 0 ? a : b;
    }
}
