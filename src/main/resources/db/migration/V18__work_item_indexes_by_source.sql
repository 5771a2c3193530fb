-- A source row's work items, whatever their state, found by the row's id first: retention's check
-- for unfinished work (any kind) and the lookups of one kind's item both seek it. It replaces two
-- indexes. The partial one on unfinished items' source_id cost an entry at every item's insert and
-- claim, and looked like the cheapest way to claim a due item without a chat whenever statistics
-- had been taken with no work pending: each such claim then read every unfinished item, a backlog
-- of 20,000 items per look while a burst was handled.
DROP INDEX work_item_unfinished_source;
DROP INDEX work_item_source_row;
CREATE INDEX work_item_source_row ON work_item (source_id, kind);
