-- Business work runs later, from storage (seed 004: "a worker must find and retry stored,
-- unfinished work"). Every stored item that needs handling is a row here, created in the same
-- transaction that stored the item, so nothing stored can miss its handler.
CREATE TABLE work_item (
    id                bigserial   PRIMARY KEY,
    kind              text        NOT NULL,           -- telegram-update, unifyport-event, album-decision
    source_key        text        NOT NULL,           -- the idempotency key handlers receive
    source_id         bigint      NOT NULL,           -- the row in the kind's own table
    chat_key          text,                           -- items of one chat run one at a time, in id order
    state             text        NOT NULL DEFAULT 'pending'
                      CHECK (state IN ('pending', 'running', 'done', 'failed', 'parked')),
    attempts          int         NOT NULL DEFAULT 0,
    next_attempt_at   timestamptz NOT NULL DEFAULT now(),
    claimed_by        text,
    claim_expires_at  timestamptz,
    last_error        text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    done_at           timestamptz,
    CONSTRAINT work_item_source UNIQUE (kind, source_key)
);
CREATE INDEX work_item_due ON work_item (next_attempt_at, id) WHERE state IN ('pending', 'failed', 'running');
CREATE INDEX work_item_chat ON work_item (kind, chat_key, id) WHERE state NOT IN ('done', 'parked');

-- The effect ledger: an external action (a reply, a CRM call) keyed by the work's idempotency
-- key. 'done' is never repeated; 'started' without 'done' (a crash in between) is never repeated
-- automatically either: it waits for a person to reconcile.
CREATE TABLE outbound_effect (
    effect_key    text        PRIMARY KEY,
    work_item_id  bigint,
    state         text        NOT NULL CHECK (state IN ('started', 'done')),
    started_at    timestamptz NOT NULL DEFAULT now(),
    done_at       timestamptz,
    result        text
);
