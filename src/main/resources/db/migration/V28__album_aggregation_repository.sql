-- Albums through Camel's Aggregator again (routes/albums.yaml): camel-sql's JdbcAggregationRepository
-- keeps each open album's group here (AlbumAggregationRepository), so any process can complete it.
-- The deadline stays on the album row (decide_after), which the repository moves with each child.
CREATE TABLE IF NOT EXISTS album_aggregation (
    id       varchar PRIMARY KEY,  -- the scoped album key
    exchange bytea   NOT NULL,     -- the group: child ids, indexes and totals, never media
    version  bigint  NOT NULL      -- optimistic locking: every add and the removal name it
);
-- Completed groups until their decision is recorded (confirmed); recovery resubmits the others.
CREATE TABLE IF NOT EXISTS album_aggregation_completed (
    id           varchar     PRIMARY KEY,  -- the aggregated exchange's id
    exchange     bytea       NOT NULL,
    version      bigint      NOT NULL,
    album_key    text,                     -- whose group it was: the sweep leaves such albums to recovery
    completed_at timestamptz NOT NULL DEFAULT now()  -- recovery takes only rows older than its grace
);
CREATE INDEX IF NOT EXISTS album_aggregation_completed_album ON album_aggregation_completed (album_key);

-- Albums open at upgrade have no group: their children went through the old album-child route.
-- The sweep decides an overdue album that no group holds, so they are decided at their deadline.
