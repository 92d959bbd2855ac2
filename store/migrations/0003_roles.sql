-- Roles, people, assignees, handoffs and the reporting chain.

CREATE TABLE persons (
    name       TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL
);
INSERT INTO persons (name, created_at) VALUES ('operator', 0);

-- A role is a named agent identity: a profile and an optional manager
-- ("role:NAME" or "person:NAME"). Implicit roles stand for a bare profile.
CREATE TABLE roles (
    name       TEXT PRIMARY KEY,
    profile    TEXT NOT NULL,
    manager    TEXT NOT NULL DEFAULT '',
    implicit   INTEGER NOT NULL DEFAULT 0 CHECK (implicit IN (0, 1)),
    created_at INTEGER NOT NULL
);

-- assignee and handed_by are "role:NAME" or "person:NAME".
ALTER TABLE tasks ADD COLUMN assignee TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN handed_by TEXT NOT NULL DEFAULT '';
-- The MCP surface its sessions get; '' derives it from the assignee.
ALTER TABLE tasks ADD COLUMN surface TEXT NOT NULL DEFAULT '';
-- JSON of the escalation in force ('' when none).
ALTER TABLE tasks ADD COLUMN stalled TEXT NOT NULL DEFAULT '';
-- Outbox: a turn ended or a run failed and the stall check has not run yet.
-- The startup sweep finishes what a crash interrupted.
ALTER TABLE tasks ADD COLUMN needs_check INTEGER NOT NULL DEFAULT 0 CHECK (needs_check IN (0, 1));
-- Why the assignee's agent cannot start (profile missing, command not found).
ALTER TABLE tasks ADD COLUMN waiting TEXT NOT NULL DEFAULT '';

CREATE TABLE blockers (
    task_id    TEXT NOT NULL REFERENCES tasks(id),
    blocker_id TEXT NOT NULL REFERENCES tasks(id),
    PRIMARY KEY (task_id, blocker_id),
    CHECK (task_id != blocker_id)
);
CREATE INDEX blockers_blocker ON blockers(blocker_id);

-- Existing tasks belong to the implicit role of their profile.
INSERT OR IGNORE INTO roles (name, profile, implicit, created_at)
    SELECT DISTINCT profile, profile, 1, 0 FROM tasks;
UPDATE tasks SET assignee = 'role:' || profile WHERE assignee = '';
UPDATE tasks SET handed_by = created_by WHERE handed_by = '' AND created_by LIKE 'person:%';
