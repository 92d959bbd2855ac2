-- Why a task waits, as code decides on it (issue 35): the cause beside
-- the shown text in waiting ('' = none, or a row written before causes
-- existed, which the engine classifies by its text once, as it reads it).
ALTER TABLE tasks ADD COLUMN waiting_cause TEXT NOT NULL DEFAULT '';
