-- Issue 12 (items 2, 3) and issue 9 (ordered work that keeps up with a busy chat).

-- Every process that runs work beats here; claims of a process whose beat is older than a few
-- intervals are released by any live process (seconds after a kill -9, not the claim time).
-- The status page reads this table as it is.
CREATE TABLE runner_heartbeat (
    process_id  text        PRIMARY KEY,       -- the claimed_by of the process's claims
    host        text        NOT NULL,
    pid         bigint      NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    beat_at     timestamptz NOT NULL DEFAULT now()
);

-- Fencing: each claim gets a new token; an outcome counts only while the item still carries it.
CREATE SEQUENCE work_claim_token;
ALTER TABLE work_item ADD COLUMN claim_token bigint;

-- One lane per chat (kind + chat_key): the chat's items are handed to one worker at a time, as a
-- run of consecutive items. Claiming looks up due lanes by index, so its cost does not grow with
-- the backlog. due_at: when the lane is worth a look (NULL: nothing to run; while claimed: when
-- the claim expires). head_id: no unfinished item of the chat has a lower id, so reading a run
-- starts at the head instead of walking finished history.
CREATE TABLE work_lane (
    kind         text        NOT NULL,
    chat_key     text        NOT NULL,
    due_at       timestamptz,
    head_id      bigint      NOT NULL DEFAULT 0,
    claimed_by   text,
    claim_token  bigint,
    PRIMARY KEY (kind, chat_key)
);
CREATE INDEX work_lane_due ON work_lane (due_at) WHERE due_at IS NOT NULL;
CREATE INDEX work_lane_claimed ON work_lane (claimed_by) WHERE claimed_by IS NOT NULL;

INSERT INTO work_lane (kind, chat_key, due_at, head_id)
SELECT kind, chat_key, now(), min(id) FROM work_item
 WHERE chat_key IS NOT NULL AND state NOT IN ('done', 'parked')
 GROUP BY kind, chat_key;

-- Items without a chat are claimed one by one straight from work_item; items of a chat only
-- through their lane. A running item's next_attempt_at is its claim's expiry, so "due" is one
-- range in both indexes.
DROP INDEX work_item_due;
CREATE INDEX work_item_unlaned_due ON work_item (next_attempt_at, id)
    WHERE chat_key IS NULL AND state IN ('pending', 'failed', 'running');
CREATE INDEX work_item_running ON work_item (claimed_by) WHERE state = 'running';
UPDATE work_item SET next_attempt_at = claim_expires_at WHERE state = 'running' AND claim_expires_at IS NOT NULL;
