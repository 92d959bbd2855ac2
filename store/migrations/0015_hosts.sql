-- Hosts (issue 27): machines reached over the system ssh where agents run.
-- ssh is the destination as given ([user@]host[:port], or an ssh_config
-- Host alias); dir is kandev's directory there ('' = ~/.kandev).
CREATE TABLE hosts (
    name       TEXT PRIMARY KEY,
    ssh        TEXT NOT NULL,
    identity   TEXT NOT NULL DEFAULT '',
    dir        TEXT NOT NULL DEFAULT '',
    max_agents INTEGER NOT NULL DEFAULT 0 CHECK (max_agents >= 0),
    created_at INTEGER NOT NULL
);
-- The host a task runs on, fixed at creation ('' = this machine).
ALTER TABLE tasks ADD COLUMN host TEXT NOT NULL DEFAULT '';
CREATE INDEX tasks_host ON tasks(host) WHERE host != '';
