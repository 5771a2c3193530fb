-- Issue 59: schemes without a timestamp (GitHub, LINE, Meta) rely on event-id dedupe alone, so
-- the key of a webhook_event row that retention deletes is kept here (the key and when, nothing
-- of the content) for retention.dedupe-key-days: a replay of the same signed bytes after the row
-- is gone is still a duplicate. Intake looks a key up here only by its primary key.
CREATE TABLE webhook_event_purged (
    workspace  text        NOT NULL,
    channel    text        NOT NULL,
    event_id   text        NOT NULL,
    purged_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT webhook_event_purged_key PRIMARY KEY (workspace, channel, event_id)
);
CREATE INDEX webhook_event_purged_at ON webhook_event_purged (purged_at);

-- Verified deliveries in which the mapping found no event are stored whole as one event with
-- parse_error 'unmapped'; work status and the status page count them per channel.
CREATE INDEX webhook_event_unmapped ON webhook_event (channel, workspace) WHERE parse_error = 'unmapped';
