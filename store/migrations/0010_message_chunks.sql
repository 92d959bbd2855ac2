-- Streamed output is appended, not rewritten (ADR 0050): an agent's
-- message or thought, and a tool call's output, grow by batches of chunks
-- kept here in id order. An entry reads as its own text (or meta's
-- output) followed by its chunks; `chunks` counts them, so an entry that
-- has none is read without a lookup. field is '' for the text, 'output'
-- for meta's $.output.
CREATE TABLE message_chunks (
    id    INTEGER PRIMARY KEY,
    seq   INTEGER NOT NULL REFERENCES messages(seq),
    field TEXT NOT NULL DEFAULT '',
    text  TEXT NOT NULL,
    at    INTEGER NOT NULL
);
CREATE INDEX message_chunks_seq ON message_chunks(seq, id);
ALTER TABLE messages ADD COLUMN chunks INTEGER NOT NULL DEFAULT 0;
-- An append is one statement: the chunk, and its entry counted and
-- touched, in the same write.
CREATE TRIGGER message_chunks_added AFTER INSERT ON message_chunks BEGIN
    UPDATE messages SET chunks = chunks + 1, updated_at = max(updated_at, NEW.at) WHERE seq = NEW.seq;
END;
-- An entry rewritten whole (chunks set back to 0) takes its chunks'
-- place: they go in the same write.
CREATE TRIGGER message_chunks_folded AFTER UPDATE OF chunks ON messages
    WHEN NEW.chunks = 0 AND OLD.chunks > 0 BEGIN
    DELETE FROM message_chunks WHERE seq = NEW.seq;
END;
