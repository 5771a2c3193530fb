-- Telegram Bot API polling intake (seed 004). Operators query these tables directly.

-- Every update returned by getUpdates, raw, whatever its type. The bot's numeric id (getMe),
-- never its token, is the key. update_id is not unique over time: after a week without updates
-- Telegram restarts ids at a random value, so a later update may reuse an id already stored.
-- A same-id row with a different payload is a new update and gets the next generation;
-- an identical payload is a redelivery and is not stored again.
CREATE TABLE telegram_update (
    id           bigserial   PRIMARY KEY,
    bot_id       bigint      NOT NULL,
    update_id    bigint      NOT NULL,
    generation   int         NOT NULL DEFAULT 0,
    update_type  text        NOT NULL,
    payload      jsonb       NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT telegram_update_key UNIQUE (bot_id, update_id, generation)
);

-- The bot's next getUpdates offset: advanced only in the transaction that stored the batch.
CREATE TABLE telegram_checkpoint (
    bot_id             bigint      PRIMARY KEY,
    bot_name           text        NOT NULL,
    next_offset        bigint      NOT NULL DEFAULT 0,
    last_poll_at       timestamptz,
    last_batch_at      timestamptz,
    stored_count       bigint      NOT NULL DEFAULT 0,
    duplicate_count    bigint      NOT NULL DEFAULT 0,
    updated_at         timestamptz NOT NULL DEFAULT now()
);

-- One active poller per bot across every process sharing the database. fencing_token grows
-- with every change of holder; the checkpoint transaction checks it, so a poller that lost
-- its lease cannot advance the offset.
CREATE TABLE telegram_poll_lease (
    bot_id         bigint      PRIMARY KEY,
    holder         text        NOT NULL,
    fencing_token  bigint      NOT NULL,
    acquired_at    timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz NOT NULL
);

-- Periods in which Telegram may have dropped updates (it keeps them 24 h at most).
CREATE TABLE telegram_loss_window (
    id           bigserial   PRIMARY KEY,
    bot_id       bigint      NOT NULL,
    from_time    timestamptz NOT NULL,
    to_time      timestamptz NOT NULL,
    recorded_at  timestamptz NOT NULL DEFAULT now()
);
