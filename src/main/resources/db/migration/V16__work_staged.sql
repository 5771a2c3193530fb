-- Work whose source is stored but whose work item is not written yet. A webhook delivery's
-- transaction stores its events and stages their work here (one thin row each); the staged work
-- scheduler turns staged rows into lanes and work items in transactions of its own and deletes
-- them, so the 2xx never waits for lanes and work items. The rows outlive a crash: any process's
-- scheduler takes them, in id order (per chat, the order their transactions committed).
CREATE TABLE work_staged (
    id          bigserial   PRIMARY KEY,
    kind        text        NOT NULL,
    source_key  text        NOT NULL,
    source_id   bigint      NOT NULL,
    chat_key    text,
    staged_at   timestamptz NOT NULL DEFAULT now()
);
