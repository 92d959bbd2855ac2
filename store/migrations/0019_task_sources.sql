-- Where a task came from (issue 41): the tracker issue it was created
-- from. kind is github, gitlab or linear; ref the issue's canonical
-- reference (gh:owner/repo#12, gl:group/project#7, gl@HOST:group/project#7,
-- linear:ENG-123); url its web page; text the issue as kandev kept it
-- (title, state, labels, body, last comments; bounded, cleaned), which
-- the agent's first prompt carries marked as the tracker's. One row per
-- task, written with the task and never changed. ref is UNIQUE over all
-- tasks, archived ones too: an issue is imported at most once (ADR 0068).
CREATE TABLE task_sources (
    task_id    TEXT PRIMARY KEY REFERENCES tasks(id),
    kind       TEXT NOT NULL CHECK (kind IN ('github', 'gitlab', 'linear')),
    ref        TEXT NOT NULL UNIQUE CHECK (length(ref) BETWEEN 1 AND 1024),
    url        TEXT NOT NULL CHECK (length(url) <= 1024),
    text       TEXT NOT NULL CHECK (length(text) <= 65536),
    created_at INTEGER NOT NULL
);
