-- Review comments on a task's diff (issue 29): a line or range of a file
-- as the diff's new side numbers them, the text of those lines when the
-- comment was made (lines: a later diff that changes them makes the
-- comment outdated) and the hunk lines the agent was shown around them.
CREATE TABLE review_comments (
    id         INTEGER PRIMARY KEY,
    task_id    TEXT NOT NULL REFERENCES tasks(id),
    author     TEXT NOT NULL,
    file       TEXT NOT NULL,
    line       INTEGER NOT NULL CHECK (line > 0),
    end_line   INTEGER NOT NULL CHECK (end_line >= line),
    body       TEXT NOT NULL,
    lines      TEXT NOT NULL,
    hunk       TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX review_comments_task ON review_comments(task_id, id);

-- Where a task's work was shared (issue 29): kind 'pull_request' is the
-- URL of the pull (or merge) request opened for its branch, one per kind.
CREATE TABLE task_links (
    task_id    TEXT NOT NULL REFERENCES tasks(id),
    kind       TEXT NOT NULL,
    url        TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (task_id, kind)
);
