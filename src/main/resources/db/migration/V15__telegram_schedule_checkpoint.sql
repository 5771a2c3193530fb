-- How far each bot's stored updates have become work items: every row of the bot in
-- telegram_update with id <= scheduled_through has its telegram-update item. The poller's
-- transaction stores a batch and moves the offset checkpoint; scheduling follows it from storage
-- in a transaction of its own, so the next getUpdates never waits for lanes and work items. A
-- crash in between leaves the rows above the mark, and the next poll lease holder schedules them.
CREATE TABLE telegram_schedule_checkpoint (
    bot_id             bigint      PRIMARY KEY,
    scheduled_through  bigint      NOT NULL DEFAULT 0,
    updated_at         timestamptz NOT NULL DEFAULT now()
);
-- Until now every update was scheduled in the transaction that stored it.
INSERT INTO telegram_schedule_checkpoint (bot_id, scheduled_through)
SELECT bot_id, max(id) FROM telegram_update GROUP BY bot_id;
