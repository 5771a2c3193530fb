-- Album deadlines in the database, and what retention and the metrics need to stay cheap.

-- When an open album is to be decided: its last child + the quiet period, set by the transaction
-- that stores a child; NULL once decided (and no child came since). Any live process decides
-- overdue albums (AlbumDecisions.decideOverdue), so an album never waits for the process that saw
-- its children.
ALTER TABLE album ADD COLUMN decide_after timestamptz;
-- Albums open before this migration are decided at once by the first sweep.
UPDATE album SET decide_after = last_child_at WHERE decided_version = 0 OR last_child_at > decided_at;
-- The sweep's claim and the open-album metrics read only open albums, however many were decided.
CREATE INDEX album_due ON album (decide_after) WHERE decide_after IS NOT NULL;
DROP INDEX IF EXISTS album_open; -- the status page's (V13), open by the old rule
CREATE INDEX album_open ON album (first_child_at) WHERE decide_after IS NOT NULL;

-- Camel's Aggregator and its JDBC repository are gone: deadlines live on the album row, counts
-- are read from the stored children.
DROP TABLE album_aggregation;
DROP TABLE album_aggregation_completed;

-- Depth metrics count unfinished work only, through an index that does not grow with done items.
CREATE INDEX work_item_unfinished ON work_item (kind, state) WHERE state <> 'done';
-- Retention keeps a source row while any unfinished work item names it, and purges a source row
-- and its done work item together: find the work items of a row.
CREATE INDEX work_item_unfinished_source ON work_item (source_id) WHERE state <> 'done';
CREATE INDEX work_item_source_row ON work_item (kind, source_id);

-- Retention finds old rows by time; BRIN indexes are tiny and nearly free to maintain on
-- append-mostly tables whose rows arrive in time order.
CREATE INDEX work_item_created_brin ON work_item USING brin (created_at);
CREATE INDEX telegram_update_received_brin ON telegram_update USING brin (received_at);
CREATE INDEX webhook_event_received_brin ON webhook_event USING brin (received_at);
CREATE INDEX outbound_effect_started_brin ON outbound_effect USING brin (started_at);
CREATE INDEX album_first_child_brin ON album USING brin (first_child_at);
