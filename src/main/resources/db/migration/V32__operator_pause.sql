-- Issue 61: an operator pauses a bot's polling or a kind of work while a route is being fixed,
-- instead of letting items burn their attempts and park. One row per paused thing, deleted on
-- resume; who and since when are shown on the status page, and a bot paused 20 h is alerted on
-- (Telegram keeps updates 24 h). Every process reads this small table at most once a second per
-- subject (before a getUpdates, before a claim), so every replica obeys within 2 s.
CREATE TABLE operator_pause (
    subject    text        NOT NULL CHECK (subject IN ('telegram-bot', 'work-kind')),
    name       text        NOT NULL,   -- the bot's name (as in telegram.bots) or the work kind
    paused_at  timestamptz NOT NULL DEFAULT now(),
    paused_by  text        NOT NULL,
    PRIMARY KEY (subject, name)
);
