-- Media albums (seed 003). Children are rows of channel_message; an album relates them.

-- Camel's JdbcAggregationRepository keeps the open groups here (and completed ones until the
-- decision is confirmed), so aggregation state survives a restart.
CREATE TABLE album_aggregation (
    id       varchar PRIMARY KEY,
    exchange bytea   NOT NULL,
    version  bigint  NOT NULL
);
CREATE TABLE album_aggregation_completed (
    id       varchar PRIMARY KEY,
    exchange bytea   NOT NULL,
    version  bigint  NOT NULL
);

-- One row per scoped album key (workspace, provider, account, conversation, album id): the same
-- album id in another conversation is another album.
CREATE TABLE album (
    album_key        text        PRIMARY KEY,
    workspace        text        NOT NULL,
    provider         text        NOT NULL,
    account_id       text        NOT NULL,
    conversation_id  text        NOT NULL,
    album_id         text        NOT NULL,
    first_child_at   timestamptz NOT NULL DEFAULT now(),
    last_child_at    timestamptz NOT NULL DEFAULT now(),
    decided_version  int         NOT NULL DEFAULT 0,
    decided_at       timestamptz,
    -- a conflict waits for a person; cleared by them
    needs_person     boolean     NOT NULL DEFAULT false
);

-- Every decision, never updated: which kind, which version, exactly which children it included.
CREATE TABLE album_decision (
    id             bigserial   PRIMARY KEY,
    album_key      text        NOT NULL REFERENCES album (album_key),
    version        int         NOT NULL,
    kind           text        NOT NULL CHECK (kind IN ('complete', 'provisional', 'conflict', 'late')),
    child_ids      jsonb       NOT NULL,  -- channel_message ids, in display order
    message_ids    jsonb       NOT NULL,  -- the provider's message ids, same order
    totals_seen    jsonb       NOT NULL,  -- distinct album.total values the children claimed
    indexes_seen   jsonb       NOT NULL,  -- album.index of each child (null when missing)
    completed_by   text        NOT NULL,  -- predicate (count reached total) or timeout (quiet period)
    decided_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT album_decision_version UNIQUE (album_key, version)
);
