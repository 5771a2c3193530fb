-- Outcome classes of guarded effects (issue 10). 'failed': definitely not performed, the next
-- attempt performs it; 'undeliverable': refused for good (bot blocked, chat not found), never
-- tried again. 'started' without an outcome still waits for a person (work resolve-effect),
-- who is recorded with the time.
ALTER TABLE outbound_effect DROP CONSTRAINT outbound_effect_state_check;
ALTER TABLE outbound_effect ADD CONSTRAINT outbound_effect_state_check
    CHECK (state IN ('started', 'done', 'failed', 'undeliverable'));
ALTER TABLE outbound_effect ADD COLUMN resolved_by text;
ALTER TABLE outbound_effect ADD COLUMN resolved_at timestamptz;

-- A done item ended by an undeliverable effect says so; NULL for a plain done.
ALTER TABLE work_item ADD COLUMN outcome text;

-- Who cleared an album's needs_person (albums resolve), and when.
ALTER TABLE album ADD COLUMN resolved_by text;
ALTER TABLE album ADD COLUMN resolved_at timestamptz;
