package io.chatintake.work;

import java.util.Locale;

/**
 * Why an item goes back to wait for a time without counting as an attempt: a limit of the other
 * side said "not yet". Its chat's lane waits for that time, in order; the worker moves on to
 * other chats meanwhile. Counted in {@code chat_intake_work_deferrals}, never logged.
 */
public enum DeferReason {
    /** The chat's next send slot is later (e.g. Telegram's one a second per chat). */
    CHAT_LIMIT,
    /** The bot's next send slot is later than a short wait (its per-second limit, shared by every process). */
    BOT_LIMIT,
    /** The other side answered "retry after" (a 429's retry_after, the route's EffectRetryAfterSeconds). */
    RETRY_AFTER;

    /** The metric tag: chat_limit, bot_limit, retry_after. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }
}
