-- Signed webhook intake (issue #4). V2 is reserved for the Telegram tables.

-- Every verified delivery, stored before the 2xx. A redelivery (same workspace, channel and
-- event id) is counted on the existing row, never stored twice.
CREATE TABLE webhook_event (
    id                bigserial   PRIMARY KEY,
    workspace         text        NOT NULL,
    channel           text        NOT NULL,
    event_id          text        NOT NULL,
    first_delivery_id text,
    last_delivery_id  text,
    delivery_count    int         NOT NULL DEFAULT 1,
    event_type        text,
    provider          text,
    account_id        text,
    occurred_at       timestamptz,
    -- exactly the bytes that were signed, so the signature can be checked again later
    body              bytea       NOT NULL,
    -- the body as JSON when it parses (and jsonb can hold it); NULL otherwise
    payload           jsonb,
    -- why the body could not be used as an envelope (invalid_json, not_an_object); NULL when it could
    parse_error       text,
    received_at       timestamptz NOT NULL DEFAULT now(),
    last_received_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT webhook_event_key UNIQUE (workspace, channel, event_id)
);

-- Business work reads events in the order the provider says they happened (delivery order is
-- not guaranteed): occurred_at, then event id.
CREATE INDEX webhook_event_occurred ON webhook_event (workspace, occurred_at, event_id);

-- One child message per (workspace, provider, account, conversation, message id), updated in
-- place. Shared by every channel (UnifyPort events, later Telegram album children). Ids are
-- text: providers send ids beyond 64 bits or with letters. Never deduplicated by album id.
CREATE TABLE channel_message (
    id               bigserial   PRIMARY KEY,
    workspace        text        NOT NULL,
    provider         text        NOT NULL,
    account_id       text        NOT NULL,
    conversation_id  text        NOT NULL,
    message_id       text        NOT NULL,
    message_type     text,
    text             text,
    caption          text,
    attachments      jsonb,
    sent_at          timestamptz,
    album_id         text,
    album_index      int,
    album_total      int,
    -- a deletion marks the row; the message itself is kept
    deleted_at       timestamptz,
    first_event_id   text        NOT NULL,
    -- occurred_at of the newest event applied, so an older event arriving late cannot
    -- overwrite newer content
    last_event_at    timestamptz,
    updated_at       timestamptz NOT NULL DEFAULT now(),
    created_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT channel_message_key UNIQUE (workspace, provider, account_id, conversation_id, message_id)
);

CREATE INDEX channel_message_album ON channel_message (workspace, provider, account_id, conversation_id, album_id)
    WHERE album_id IS NOT NULL;
