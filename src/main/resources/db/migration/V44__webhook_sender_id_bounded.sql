-- An authentic event whose sender id is too long for a btree entry (about 2.7 kB) failed the
-- insert of its whole delivery at every retry. Such an id is not indexed (the function gives
-- null): the event is stored, and searching by that sender finds it through the event's other
-- fields only. A row stored earlier with a longer id (one that compressed enough to fit) keeps
-- its index entry, which only a search for that very id reads.
-- The places are read twice rather than in a sub-select: a body of one expression is inlined
-- into each insert's index maintenance, a sub-select is not.
CREATE OR REPLACE FUNCTION webhook_sender_id(payload jsonb) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN octet_length(COALESCE(payload #>> '{data,sender,id}', payload #>> '{event,user}', payload #>> '{source,userId}',
                                           payload ->> 'from', payload #>> '{author,id}', payload #>> '{d,author,id}',
                                           payload #>> '{member,user,id}', payload #>> '{user,id}')) <= 1024
                THEN COALESCE(payload #>> '{data,sender,id}', payload #>> '{event,user}', payload #>> '{source,userId}',
                              payload ->> 'from', payload #>> '{author,id}', payload #>> '{d,author,id}',
                              payload #>> '{member,user,id}', payload #>> '{user,id}') END
$$;
