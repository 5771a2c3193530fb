-- The status page's graphs: every process adds what its own counters counted since its last
-- sample into the bucket of that minute and of that hour (counters), or sets the value the
-- database holds now (gauges: backlog, oldest due age). Buckets are shared by all processes, so
-- every replica's page draws the same history, and it survives restarts. Bounded: minute rows are
-- kept two hours, hour rows retention.status-history-days (8 by default).
CREATE TABLE status_rollup (
    resolution  text             NOT NULL CHECK (resolution IN ('minute', 'hour')),
    series      text             NOT NULL,   -- what was counted: stored, done, failed, parked, ...
    subject     text             NOT NULL,   -- whose: bot <name>, channel/workspace, work kind
    bucket      timestamptz      NOT NULL,   -- the minute or hour it was counted in (UTC)
    value       double precision NOT NULL,
    PRIMARY KEY (resolution, series, subject, bucket)
);
CREATE INDEX status_rollup_bucket ON status_rollup (resolution, bucket);

-- What operators did from the status page (retry, settle an effect, resolve an album), by whom
-- (the name they typed) and when: the page's counterpart of the CLI's --by.
CREATE TABLE operator_action (
    id        bigserial   PRIMARY KEY,
    acted_at  timestamptz NOT NULL DEFAULT now(),
    acted_by  text        NOT NULL,
    action    text        NOT NULL,
    target    text        NOT NULL,
    outcome   text        NOT NULL
);
CREATE INDEX operator_action_acted_at ON operator_action (acted_at);

-- Effects waiting for a person, listed on the page oldest first.
CREATE INDEX outbound_effect_started ON outbound_effect (started_at) WHERE state = 'started';
