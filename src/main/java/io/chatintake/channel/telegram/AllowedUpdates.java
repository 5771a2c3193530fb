package io.chatintake.channel.telegram;

import java.util.Arrays;
import java.util.List;

/**
 * The update types getUpdates asks for. Telegram's {@code allowed_updates} is sticky: when a call
 * leaves it out, whatever an earlier call (or another program) set stays in force, and by default
 * {@code chat_member}, {@code message_reaction} and {@code message_reaction_count} are never sent.
 * So every poll names the types explicitly: by default every type the Bot API has.
 */
final class AllowedUpdates {
    /** The configuration key; empty or absent means {@link #ALL}. */
    static final String KEY = "telegram.allowed-updates";

    /** Every field of the Bot API's Update object besides update_id (Bot API 9.x). */
    static final List<String> ALL = List.of("message", "edited_message", "channel_post", "edited_channel_post",
            "business_connection", "business_message", "edited_business_message", "deleted_business_messages",
            "message_reaction", "message_reaction_count", "inline_query", "chosen_inline_result", "callback_query",
            "shipping_query", "pre_checkout_query", "purchased_paid_media", "poll", "poll_answer", "my_chat_member",
            "chat_member", "chat_join_request", "chat_boost", "removed_chat_boost");

    private AllowedUpdates() {
    }

    /** A comma-separated list as configured; empty: every type. Names not in {@link #ALL} (newer types) are passed on. */
    static List<String> parse(String configured) {
        if (configured == null || configured.isBlank()) {
            return ALL;
        }
        return Arrays.stream(configured.split(",")).map(String::trim).filter(s -> !s.isEmpty()).distinct().toList();
    }

    /** The types a list leaves out: Telegram never sends them to this bot. */
    static List<String> notRequested(List<String> requested) {
        return ALL.stream().filter(type -> !requested.contains(type)).toList();
    }
}
