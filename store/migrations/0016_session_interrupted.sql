-- A session a daemon exit (a shutdown or a crash) cut short was told by
-- the prefix of its end reason; a flag says it now (ADR 0058). Sessions
-- ended before the flag are classified once, here, by the old rule: the
-- reason begins "interrupted: the kandev daemon ".
ALTER TABLE sessions ADD COLUMN interrupted INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET interrupted = 1 WHERE substr(error, 1, 31) = 'interrupted: the kandev daemon ';
