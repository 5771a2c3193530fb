-- Nothing reads webhook events by (workspace, occurred_at, event_id): handlers load their event by
-- id, retention purges by age of receipt. The index cost an entry on a wide key in every
-- delivery's transaction.
DROP INDEX webhook_event_occurred;
