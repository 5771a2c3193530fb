-- Issue 45 (fair poll leases across replicas): every process that would poll a bot says so here,
-- holding its lease or standing by. The live candidates give the share of leases each process may
-- hold, ceil(bots / processes), and tell a process over its share that another one would take a
-- lease it hands over. Rows not seen for a lease period are ignored; a clean stop deletes its own.
CREATE TABLE telegram_poll_candidate (
    holder   text        NOT NULL,      -- the process, as telegram_poll_lease.holder and runner_heartbeat.process_id
    bot_id   bigint      NOT NULL,
    seen_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (holder, bot_id)
);
