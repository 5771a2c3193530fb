-- Every start of a runner, so an operator can see which processes have worked on this database.
CREATE TABLE runner_start (
    id          bigserial   PRIMARY KEY,
    started_at  timestamptz NOT NULL DEFAULT now(),
    host        text        NOT NULL,
    pid         bigint      NOT NULL,
    version     text        NOT NULL
);
