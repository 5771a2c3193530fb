-- Find: GET /status/messages and `messages find|show` search stored messages (Telegram updates and
-- webhook events) and show each one's timeline.

-- Which process stored a delivery: the connection's application_name, which the pool sets per
-- process. A default, so no insert changes; set apart from ADD COLUMN so old rows are not rewritten.
ALTER TABLE telegram_update ADD COLUMN stored_by text;
ALTER TABLE telegram_update ALTER COLUMN stored_by SET DEFAULT current_setting('application_name', true);
ALTER TABLE webhook_event ADD COLUMN stored_by text;
ALTER TABLE webhook_event ALTER COLUMN stored_by SET DEFAULT current_setting('application_name', true);

-- Every run of an item (work_item keeps only the last): written by the statement that records
-- outcomes. Deleted with its item, so retention needs no rule of its own.
CREATE TABLE work_run (
    id            bigserial   PRIMARY KEY,
    work_item_id  bigint      NOT NULL REFERENCES work_item (id) ON DELETE CASCADE,
    attempt       int         NOT NULL,
    state         text        NOT NULL,   -- what the run left the item in: done, failed, parked
    outcome       text,                   -- work_item.outcome of the run (undeliverable), or NULL
    error         text,                   -- the failure's line, as work_item.last_error
    process       text,                   -- the claimed_by that ran it
    claimed_at    timestamptz,            -- when its run was claimed
    finished_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX work_run_item ON work_run (work_item_id, id);

-- What a search filters on, from the payload's known places. IMMUTABLE so they can be indexed.
CREATE FUNCTION telegram_chat_id(payload jsonb) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT COALESCE(payload #>> '{message,chat,id}', payload #>> '{edited_message,chat,id}',
                    payload #>> '{channel_post,chat,id}', payload #>> '{edited_channel_post,chat,id}',
                    payload #>> '{business_message,chat,id}', payload #>> '{callback_query,message,chat,id}',
                    payload #>> '{my_chat_member,chat,id}', payload #>> '{chat_member,chat,id}',
                    payload #>> '{chat_join_request,chat,id}', payload #>> '{message_reaction,chat,id}')
$$;
CREATE FUNCTION telegram_sender_id(payload jsonb) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT COALESCE(payload #>> '{message,from,id}', payload #>> '{edited_message,from,id}',
                    payload #>> '{channel_post,sender_chat,id}', payload #>> '{edited_channel_post,sender_chat,id}',
                    payload #>> '{business_message,from,id}', payload #>> '{callback_query,from,id}',
                    payload #>> '{inline_query,from,id}', payload #>> '{my_chat_member,from,id}',
                    payload #>> '{chat_member,from,id}', payload #>> '{chat_join_request,from,id}',
                    payload #>> '{message_reaction,user,id}')
$$;
CREATE FUNCTION telegram_text(payload jsonb) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT COALESCE(payload #>> '{message,text}', payload #>> '{message,caption}',
                    payload #>> '{edited_message,text}', payload #>> '{edited_message,caption}',
                    payload #>> '{channel_post,text}', payload #>> '{channel_post,caption}',
                    payload #>> '{edited_channel_post,text}', payload #>> '{edited_channel_post,caption}',
                    payload #>> '{business_message,text}', payload #>> '{business_message,caption}',
                    payload #>> '{callback_query,data}', payload #>> '{inline_query,query}')
$$;
-- A route's mapping has no sender field: the shipped channels' places (UnifyPort, Slack, LINE,
-- WhatsApp, Discord message and interaction).
CREATE FUNCTION webhook_sender_id(payload jsonb) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT COALESCE(payload #>> '{data,sender,id}', payload #>> '{event,user}', payload #>> '{source,userId}',
                    payload ->> 'from', payload #>> '{author,id}', payload #>> '{d,author,id}',
                    payload #>> '{member,user,id}', payload #>> '{user,id}')
$$;

-- Newest first, keyset-paginated on (received_at, id); the rest narrow it.
CREATE INDEX telegram_update_received ON telegram_update (received_at, id);
CREATE INDEX telegram_update_chat ON telegram_update (telegram_chat_id(payload), received_at);
CREATE INDEX telegram_update_sender ON telegram_update (telegram_sender_id(payload), received_at);
CREATE INDEX webhook_event_received ON webhook_event (received_at, id);
CREATE INDEX webhook_event_event_id ON webhook_event (event_id);
CREATE INDEX webhook_event_sender ON webhook_event (webhook_sender_id(payload), received_at);
-- A webhook event's conversation and text are its child message's (the route mapped them).
CREATE INDEX channel_message_first_event ON channel_message (first_event_id);
CREATE INDEX channel_message_conversation ON channel_message (conversation_id, created_at);

-- "Text contains": trigram GIN indexes when pg_trgm can be had (the embedded PostgreSQL ships it;
-- managed services allow it, and it is a trusted extension from PostgreSQL 13). Without it a text
-- search reads the other filters' rows, or the newest rows, and still answers.
DO $$
DECLARE trgm text;
BEGIN
    IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm') THEN
        BEGIN
            CREATE EXTENSION IF NOT EXISTS pg_trgm;
            -- Wherever it was installed (another application's schema, too), its operator class is named in full.
            SELECT extnamespace::regnamespace::text INTO trgm FROM pg_extension WHERE extname = 'pg_trgm';
            EXECUTE format('CREATE INDEX telegram_update_text ON telegram_update USING gin (telegram_text(payload) %s.gin_trgm_ops)', trgm);
            EXECUTE format('CREATE INDEX channel_message_text ON channel_message USING gin ((COALESCE(text, caption)) %s.gin_trgm_ops)', trgm);
        EXCEPTION WHEN insufficient_privilege OR undefined_object OR undefined_file OR feature_not_supported THEN
            RAISE NOTICE 'pg_trgm not available (%): text search runs without its index', SQLERRM;
        END;
    END IF;
END $$;

-- A timeline lists the effects of a message's work items.
CREATE INDEX outbound_effect_work_item ON outbound_effect (work_item_id);
