-- Host faults that outlive a daemon (issue 27). unreachable_since: since
-- when the connection to the host has been lost (0 = reachable), so a
-- restarted daemon keeps waiting for it, up to the same give-up.
ALTER TABLE hosts ADD COLUMN unreachable_since INTEGER NOT NULL DEFAULT 0;
-- Sessions whose processes on a host are still to be ended there by
-- marker: cut by a lost connection (their local side is torn down, the
-- host's could not be reached), swept once the host is reachable again.
CREATE TABLE host_sweeps (
    session_id TEXT PRIMARY KEY,
    host       TEXT NOT NULL REFERENCES hosts(name) ON DELETE CASCADE,
    created_at INTEGER NOT NULL
);
-- A profile's default host for its new top-level tasks ('' = none:
-- the configuration's host, else this machine).
ALTER TABLE profiles ADD COLUMN host TEXT NOT NULL DEFAULT '';
