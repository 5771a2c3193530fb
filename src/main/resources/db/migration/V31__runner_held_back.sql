-- Issue 56: operators see when handling is held back for intake, and since when. `work status`
-- is a process of its own that reads only the database, so each heartbeat says it: when the
-- process's current spell of holding its handlers back began (the database's time), NULL while
-- it does not hold them back.
ALTER TABLE runner_heartbeat ADD COLUMN held_back_since timestamptz;
