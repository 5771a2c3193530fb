-- A webhook delivery commits one row before its 2xx: the event, which is itself the durable job.
-- What the event implies (its child message, album link, attachment rows, work item) is derived
-- after the 2xx, in id order, by any process's deriver; the row carries all the deriver needs, so
-- a process without the channel's route derives it too. Intake writes NULL (to derive); a row
-- written otherwise (before this migration, when intake derived, or by hand) has nothing to
-- derive and reads '-infinity' (a constant default: the table is not rewritten).
ALTER TABLE webhook_event ADD COLUMN derived_at timestamptz DEFAULT '-infinity';
-- The child message as the channel's route mapped it (JSON text, so any string the child's text
-- columns take is kept as it is), with what the event does to it; cleared once derived.
ALTER TABLE webhook_event ADD COLUMN child text;
-- The work item the event becomes: its kind, chat (per-chat order) and trace context.
ALTER TABLE webhook_event ADD COLUMN work_kind text;
ALTER TABLE webhook_event ADD COLUMN chat_key text;
ALTER TABLE webhook_event ADD COLUMN trace_context text;
-- The deriver's claim (id order, FOR UPDATE SKIP LOCKED), `work status` and the status page's
-- pending count: only underived rows are in it, a handful at any time.
CREATE INDEX webhook_event_underived ON webhook_event (id) WHERE derived_at IS NULL;
