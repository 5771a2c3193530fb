-- Updates confirmed outside this store (seed 004): the first update a poll returned had an id
-- above the saved checkpoint while nothing explained a jump (no id restart after a week idle,
-- no 24 h silence), so from_update_id..to_update_id were confirmed by another getUpdates caller
-- (a forgotten poller, a manual call) and never reached this inbox.
CREATE TABLE telegram_gap (
    id              bigserial   PRIMARY KEY,
    bot_id          bigint      NOT NULL,
    from_update_id  bigint      NOT NULL,
    to_update_id    bigint      NOT NULL,
    detected_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX telegram_gap_bot ON telegram_gap (bot_id, detected_at);
