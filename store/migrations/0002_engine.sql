-- The engine: agent sessions, the conversation, the delivery queue and the
-- per-session tokens the MCP bridge presents.

ALTER TABLE tasks ADD COLUMN halted INTEGER NOT NULL DEFAULT 0 CHECK (halted IN (0, 1));
-- Latest session, so task views need no scan of the sessions table.
ALTER TABLE tasks ADD COLUMN session_id TEXT;
-- The title is a placeholder the task's agent is asked to replace.
ALTER TABLE tasks ADD COLUMN title_pending INTEGER NOT NULL DEFAULT 0 CHECK (title_pending IN (0, 1));

-- One agent run: a process from spawn to exit. A later run of the same task
-- and role continues the agent's own session through agent_session_id.
CREATE TABLE sessions (
    id               TEXT PRIMARY KEY,
    task_id          TEXT NOT NULL REFERENCES tasks(id),
    role             TEXT NOT NULL,
    profile          TEXT NOT NULL,
    state            TEXT NOT NULL CHECK (state IN ('created', 'starting', 'running',
                         'waiting_for_input', 'completed', 'failed', 'cancelled')),
    agent_session_id TEXT NOT NULL DEFAULT '',
    pid              INTEGER NOT NULL DEFAULT 0,
    error            TEXT NOT NULL DEFAULT '',
    turns            INTEGER NOT NULL DEFAULT 0,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
);
CREATE INDEX sessions_task ON sessions(task_id, created_at);
CREATE INDEX sessions_live ON sessions(state)
    WHERE state IN ('created', 'starting', 'running', 'waiting_for_input');

-- The durable, ordered conversation. Tool calls and streamed text are
-- updated in place (ref = tool call id); questions keep their lifecycle in
-- meta, which is its single source of truth.
CREATE TABLE messages (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id    TEXT NOT NULL REFERENCES tasks(id),
    session_id TEXT REFERENCES sessions(id),
    kind       TEXT NOT NULL,
    author     TEXT NOT NULL DEFAULT '',
    text       TEXT NOT NULL DEFAULT '',
    meta       TEXT NOT NULL DEFAULT '{}',
    ref        TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX messages_task ON messages(task_id, seq);
CREATE INDEX messages_ref ON messages(ref) WHERE ref != '';
CREATE INDEX messages_pending_question ON messages(task_id)
    WHERE kind = 'question' AND json_extract(meta, '$.status') = 'pending';

-- Messages waiting for a task's next turns, delivered one per turn in
-- (priority, id) order. Priority 0 jumps the line (interrupts, redeliveries).
CREATE TABLE queue (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id    TEXT NOT NULL REFERENCES tasks(id),
    priority   INTEGER NOT NULL DEFAULT 1,
    kind       TEXT NOT NULL DEFAULT 'message',
    sender     TEXT NOT NULL,
    text       TEXT NOT NULL,
    meta       TEXT NOT NULL DEFAULT '{}',
    created_at INTEGER NOT NULL
);
CREATE INDEX queue_task ON queue(task_id, priority, id);

-- Per-session MCP tokens, stored hashed; revoked when the session ends.
CREATE TABLE tokens (
    hash       TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    task_id    TEXT NOT NULL REFERENCES tasks(id),
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);
CREATE INDEX tokens_session ON tokens(session_id);
