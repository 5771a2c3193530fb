-- The status page (GET /status) reads only what these indexes find, so rendering it costs the
-- same after a year of history as on the first day: the newest delivery per webhook channel,
-- parked work, open albums and albums needing a person, unfinished and recent attachments.
CREATE INDEX webhook_event_channel_last ON webhook_event (channel, workspace, last_received_at);
CREATE INDEX work_item_parked ON work_item (id) WHERE state = 'parked';
CREATE INDEX album_open ON album (first_child_at) WHERE decided_version = 0 OR last_child_at > decided_at;
CREATE INDEX album_needs_person ON album (album_key) WHERE needs_person;
CREATE INDEX message_attachment_unfinished ON message_attachment (status) WHERE status IN ('pending', 'failed');
CREATE INDEX message_attachment_created ON message_attachment (created_at);
