-- One row per attachment of a child message, with its own download status (albums rule 8: file
-- readiness is separate from album completeness). V5 is reserved for the album tables.
CREATE TABLE message_attachment (
    id                 bigserial   PRIMARY KEY,
    channel_message_id bigint      NOT NULL REFERENCES channel_message (id),
    -- index in the child's attachments array: a URL is never a key (it changes per delivery)
    position           int         NOT NULL,
    source             text        NOT NULL CHECK (source IN ('url', 'telegram-file')),
    -- a temporary signed URL: a secret, never logged
    url                text,
    telegram_bot_id    bigint,
    telegram_file_id   text,
    title              text,
    declared_size      bigint,
    declared_type      text,
    status             text        NOT NULL DEFAULT 'pending'
                       CHECK (status IN ('pending', 'stored', 'failed', 'expired', 'too_large')),
    attempts           int         NOT NULL DEFAULT 0,
    last_error         text,
    sha256             text,
    size_bytes         bigint,
    content_type       text,
    -- relative to <data-dir>/media: <first 2 hex>/<sha256>
    media_path         text,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    stored_at          timestamptz,
    CONSTRAINT message_attachment_position UNIQUE (channel_message_id, position)
);
CREATE INDEX message_attachment_sha256 ON message_attachment (sha256) WHERE sha256 IS NOT NULL;
