-- Poison updates (issue 12, item 1): an update jsonb refuses (a \u0000 escape, a lone surrogate)
-- is stored as the text Telegram sent, flagged with the reason, instead of failing its whole
-- batch (and with it the checkpoint) on every retry. Exactly one of payload / raw_payload is set.
ALTER TABLE telegram_update
    ALTER COLUMN payload DROP NOT NULL,
    ADD COLUMN raw_payload text,
    -- why jsonb refused it: nul_character, lone_surrogate, or jsonb_rejected_<SQLState>
    ADD COLUMN raw_reason  text,
    ADD COLUMN stored_raw  boolean GENERATED ALWAYS AS (payload IS NULL) STORED,
    ADD CONSTRAINT telegram_update_payload_or_raw
        CHECK ((payload IS NULL) = (raw_payload IS NOT NULL) AND (raw_payload IS NULL) = (raw_reason IS NULL));

-- Loss windows while failing (item 7): one window per period without a successful poll, keyed by
-- its start (the last success); it is extended while the failure lasts instead of recorded again.
-- Windows recorded twice for one start by earlier versions are merged first.
DELETE FROM telegram_loss_window a
 USING telegram_loss_window b
 WHERE a.bot_id = b.bot_id AND a.from_time = b.from_time
   AND (a.to_time < b.to_time OR (a.to_time = b.to_time AND a.id < b.id));
CREATE UNIQUE INDEX telegram_loss_window_start ON telegram_loss_window (bot_id, from_time);

-- The webhook twin needs no new column (body is bytea already); its parse_error gains reasons.
COMMENT ON COLUMN webhook_event.parse_error IS
    'why the body is kept raw (payload NULL): invalid_json, not_an_object, or what jsonb refuses: not_utf8, nul_character, lone_surrogate, byte_order_mark';
COMMENT ON COLUMN telegram_update.raw_reason IS
    'why jsonb refused the update (stored as text in raw_payload): nul_character, lone_surrogate, byte_order_mark, jsonb_rejected_<SQLState>';
