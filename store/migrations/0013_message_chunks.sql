-- Streamed output is appended, not rewritten (ADR 0050): an agent's
-- message or thought, and a tool call's output, grow by batches of chunks
-- kept here in id order. An entry reads as its own text (or meta's
-- output) followed by its chunks, and as updated when its last chunk was
-- (at); `chunks` is 1 once it has any, so an entry that has none is read
-- without a lookup. field is '' for the text, 'output' for meta's
-- $.output.
CREATE TABLE message_chunks (
    id    INTEGER PRIMARY KEY,
    seq   INTEGER NOT NULL REFERENCES messages(seq),
    field TEXT NOT NULL DEFAULT '',
    text  TEXT NOT NULL,
    at    INTEGER NOT NULL
);
CREATE INDEX message_chunks_seq ON message_chunks(seq, id);
ALTER TABLE messages ADD COLUMN chunks INTEGER NOT NULL DEFAULT 0;
-- The first append marks its entry, in the same statement; later ones
-- leave the entry's row alone (an UPDATE that matches no row writes no
-- page), so an append writes the chunk and its index entry only.
CREATE TRIGGER message_chunks_added AFTER INSERT ON message_chunks BEGIN
    UPDATE messages SET chunks = 1 WHERE seq = NEW.seq AND chunks = 0;
END;
-- An entry rewritten whole (chunks set back to 0) takes its chunks'
-- place: they go in the same write.
CREATE TRIGGER message_chunks_folded AFTER UPDATE OF chunks ON messages
    WHEN NEW.chunks = 0 AND OLD.chunks > 0 BEGIN
    DELETE FROM message_chunks WHERE seq = NEW.seq;
END;
