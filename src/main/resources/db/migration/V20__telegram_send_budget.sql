-- Each bot's next free send slot, shared by every process sending for it (telegram-bot), so
-- replicas together stay within telegram.send.per-bot-per-second.
CREATE TABLE telegram_send_budget (
    bot_name     text PRIMARY KEY,
    next_slot_at timestamptz NOT NULL
);
