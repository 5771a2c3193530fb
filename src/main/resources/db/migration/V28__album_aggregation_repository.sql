-- Albums through Camel's Aggregator again (routes/albums.yaml), whose aggregation repository
-- (AlbumAggregationRepository, a JdbcAggregationRepository) keeps its groups in the album tables:
-- an open album (decide_after set) is a group, and its children are the channel_message rows
-- stored before the aggregator sees them. Adding a child to a group writes nothing more, and any
-- process can complete any group.

-- A group removed (completed) until its decision is recorded and confirmed: at most one per album
-- at a time, so one removal wins however many processes complete the album. Recovery resubmits
-- the rows a dead process left.
CREATE TABLE IF NOT EXISTS album_aggregation_completed (
    id           varchar     PRIMARY KEY,            -- the aggregated exchange's id
    album_key    text        NOT NULL UNIQUE,
    version      int         NOT NULL,               -- the album's decided_version at removal
    completed_by text        NOT NULL,               -- the Aggregator's completion: predicate, timeout or force
    completed_at timestamptz NOT NULL DEFAULT now()  -- recovery takes only rows older than its grace
);

-- The groups as camel-sql reads them (id = the scoped album key), for getKeys and for people:
-- open albums whose removal is not in flight.
CREATE OR REPLACE VIEW album_aggregation AS
SELECT a.album_key AS id, a.decided_version AS version, a.first_child_at, a.last_child_at, a.decide_after
  FROM album a
 WHERE a.decide_after IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM album_aggregation_completed k WHERE k.album_key = a.album_key);

-- Albums open at upgrade are groups already: the sweep completes them at their deadline.
