-- Idempotency keys of task creations (issue 10): a client that retries a
-- create whose reply was cut gets the first task back instead of a second
-- one. A key belongs to the actor that sent it.
CREATE TABLE create_keys (
    actor      TEXT NOT NULL,
    key        TEXT NOT NULL,
    task_id    TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (actor, key)
);
