-- A run's end is recorded first and its processes are torn down after it,
-- in the background (issue 21): a daemon killed in between leaves them
-- running under a session that looks finished. torn_down_at is set once
-- the teardown is over; a session without it may still have processes,
-- whatever its state, and the next daemon start ends them (found by the
-- session's marker) before setting it.
ALTER TABLE sessions ADD COLUMN torn_down_at INTEGER;
CREATE INDEX sessions_not_torn_down ON sessions(id) WHERE torn_down_at IS NULL;
