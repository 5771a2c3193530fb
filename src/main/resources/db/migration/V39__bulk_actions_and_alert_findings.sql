-- Issue 61, act on many: a filtered retry or settle runs in chunks, each chunk with its change and
-- this row in one transaction; the row is written by the first chunk and its count updated by
-- each, so the action is recorded once, with its filter and how far it got. A person (the page's
-- Cancel, the CLI's Ctrl-C) asks it to stop after the current chunk through cancel_requested_at,
-- which any process running it reads between chunks.
ALTER TABLE operator_action
    ADD COLUMN filter              text,        -- the filter it acted on, NULL for one-item actions
    ADD COLUMN item_count          bigint,      -- items changed so far (final once state is not 'running')
    ADD COLUMN state               text CHECK (state IN ('running', 'done', 'cancelled')),
    ADD COLUMN cancel_requested_at timestamptz;
CREATE INDEX operator_action_running ON operator_action (id) WHERE state = 'running';

-- Issue 61, alerts with a beginning and an end: one row per occurrence of a finding (a bot not
-- polling, work waiting too long, ...), opened when a check first sees it and closed when a check
-- no longer does. Kept here so every replica agrees and a restart resends nothing. A finding is
-- announced by the message that took its start (start_message_id) and its end (end_message_id).
CREATE TABLE operator_finding (
    id               bigserial   PRIMARY KEY,
    finding          text        NOT NULL,   -- stable name, e.g. 'bot-not-polling:123', 'work-parked:album-child'
    text             text        NOT NULL,   -- what the check said when it started
    started_at       timestamptz NOT NULL DEFAULT now(),
    cleared_at       timestamptz,
    start_message_id bigint,
    end_message_id   bigint
);
-- One open occurrence per finding, whichever replica saw it first.
CREATE UNIQUE INDEX operator_finding_open ON operator_finding (finding) WHERE cleared_at IS NULL;
CREATE INDEX operator_finding_unsent ON operator_finding (id)
    WHERE start_message_id IS NULL OR (cleared_at IS NOT NULL AND end_message_id IS NULL);

-- One alert message per destination, at most one a minute, listing the findings that started or
-- ended since its previous one. Sent through the effect guard keyed by its id: exactly once.
CREATE TABLE operator_alert_message (
    id          bigserial   PRIMARY KEY,
    destination text        NOT NULL,
    text        text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    sent_at     timestamptz
);
CREATE INDEX operator_alert_message_latest ON operator_alert_message (destination, created_at);
