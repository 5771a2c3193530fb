-- The text a search for "text contains" reads, one row per stored update that has text, written
-- after the batch commits (with its work items) rather than indexed on telegram_update itself:
-- a trigram index costs several times the insert of a long text, and intake's commit, which
-- Telegram's next offset waits for, should cost what the raw row costs.
DROP INDEX IF EXISTS telegram_update_text;

CREATE TABLE telegram_update_text (
    update_row_id bigint      PRIMARY KEY REFERENCES telegram_update (id) ON DELETE CASCADE,
    text          text        NOT NULL
);

-- Whatever removes an update's content (expiry, erasure) removes its searchable copy with it.
CREATE FUNCTION telegram_update_text_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM telegram_update_text WHERE update_row_id = NEW.id;
    RETURN NULL;
END $$;
CREATE TRIGGER telegram_update_content_removed AFTER UPDATE OF payload ON telegram_update
    FOR EACH ROW WHEN (OLD.payload IS NOT NULL AND NEW.payload IS NULL) EXECUTE FUNCTION telegram_update_text_removed();

INSERT INTO telegram_update_text (update_row_id, text)
SELECT id, telegram_text(payload) FROM telegram_update WHERE telegram_text(payload) IS NOT NULL;

DO $$
DECLARE trgm text;
BEGIN
    SELECT extnamespace::regnamespace::text INTO trgm FROM pg_extension WHERE extname = 'pg_trgm';
    IF trgm IS NOT NULL THEN
        EXECUTE format('CREATE INDEX telegram_update_text_trgm ON telegram_update_text USING gin (text %s.gin_trgm_ops)', trgm);
    END IF;
END $$;
