-- Issue 61: content (what people wrote and sent) is removed before the books (ids, times, kinds,
-- states, counts). retention.content-days empties the content columns of old rows, an erasure
-- empties those of one conversation or sender at once; content_removed_at says when, so a row
-- without content is told apart from one that never had any, and operator retry refuses it.
ALTER TABLE telegram_update ADD COLUMN content_removed_at timestamptz;
ALTER TABLE telegram_update DROP CONSTRAINT telegram_update_payload_or_raw;
ALTER TABLE telegram_update ADD CONSTRAINT telegram_update_payload_or_raw
    CHECK (CASE WHEN content_removed_at IS NOT NULL THEN payload IS NULL AND raw_payload IS NULL
                ELSE (payload IS NULL) = (raw_payload IS NOT NULL) AND (raw_payload IS NULL) = (raw_reason IS NULL) END);

ALTER TABLE webhook_event ALTER COLUMN body DROP NOT NULL;
ALTER TABLE webhook_event ADD COLUMN content_removed_at timestamptz;
ALTER TABLE channel_message ADD COLUMN content_removed_at timestamptz;
ALTER TABLE message_attachment ADD COLUMN content_removed_at timestamptz;
ALTER TABLE outbound_effect ADD COLUMN content_removed_at timestamptz;

-- Work whose content was erased ends as 'erased': never claimed, never retried.
ALTER TABLE work_item DROP CONSTRAINT work_item_state_check;
ALTER TABLE work_item ADD CONSTRAINT work_item_state_check
    CHECK (state IN ('pending', 'running', 'done', 'failed', 'parked', 'erased'));
-- A lane's unfinished items skip erased ones too: the index's predicate is the lane queries' own.
DROP INDEX work_item_chat;
CREATE INDEX work_item_chat ON work_item (kind, chat_key, id) WHERE state NOT IN ('done', 'parked', 'erased');

-- Content expiry looks for old rows whose content is still there.
CREATE INDEX telegram_update_content_kept ON telegram_update (received_at) WHERE content_removed_at IS NULL;
CREATE INDEX webhook_event_content_kept ON webhook_event (received_at) WHERE content_removed_at IS NULL;
CREATE INDEX channel_message_content_kept ON channel_message (updated_at) WHERE content_removed_at IS NULL;
CREATE INDEX message_attachment_content_kept ON message_attachment (created_at) WHERE content_removed_at IS NULL;
CREATE INDEX outbound_effect_content_kept ON outbound_effect (started_at) WHERE content_removed_at IS NULL AND result IS NOT NULL;
CREATE INDEX message_attachment_media_path ON message_attachment (media_path) WHERE media_path IS NOT NULL;

-- One row per erasure on request: who, when, which key, and how many rows of each kind lost their
-- content (counts only: never any content). The operator_action row of the same transaction says
-- the same in a sentence.
CREATE TABLE erasure (
    id         bigserial   PRIMARY KEY,
    erased_at  timestamptz NOT NULL DEFAULT now(),
    erased_by  text        NOT NULL,
    subject    text        NOT NULL CHECK (subject IN ('telegram', 'conversation', 'sender')),
    key        text        NOT NULL,
    counts     jsonb       NOT NULL
);
CREATE INDEX erasure_key ON erasure (subject, key);
