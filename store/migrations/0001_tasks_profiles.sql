-- Tasks and user profiles: the foundation.
CREATE TABLE tasks (
    id          TEXT PRIMARY KEY,
    title       TEXT NOT NULL CHECK (length(trim(title)) > 0),
    description TEXT NOT NULL DEFAULT '',
    parent_id   TEXT REFERENCES tasks(id),
    cwd         TEXT NOT NULL,
    profile     TEXT NOT NULL,
    status      TEXT NOT NULL DEFAULT 'todo'
                CHECK (status IN ('todo', 'in_progress', 'review', 'done', 'cancelled')),
    autopilot   INTEGER NOT NULL DEFAULT 0 CHECK (autopilot IN (0, 1)),
    created_by  TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    archived_at INTEGER
);
CREATE INDEX tasks_parent ON tasks(parent_id);

-- Autopilot and parent are fixed at creation. core refuses the change with a
-- clear error first; these triggers make every other write path fail too.
CREATE TRIGGER tasks_autopilot_fixed BEFORE UPDATE OF autopilot ON tasks
WHEN NEW.autopilot IS NOT OLD.autopilot
BEGIN
    SELECT RAISE(ABORT, 'autopilot is fixed at creation');
END;

CREATE TRIGGER tasks_parent_fixed BEFORE UPDATE OF parent_id ON tasks
WHEN NEW.parent_id IS NOT OLD.parent_id
BEGIN
    SELECT RAISE(ABORT, 'parent is fixed at creation');
END;

-- User profiles. Built-in profiles live in the binary; a row here with a
-- built-in's name overrides it.
CREATE TABLE profiles (
    name       TEXT PRIMARY KEY,
    command    TEXT NOT NULL CHECK (length(command) > 0),
    args       TEXT NOT NULL DEFAULT '[]',
    env        TEXT NOT NULL DEFAULT '[]',
    mcp        INTEGER NOT NULL DEFAULT 1 CHECK (mcp IN (0, 1)),
    created_at INTEGER NOT NULL
);
