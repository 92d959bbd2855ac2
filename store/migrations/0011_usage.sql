-- What agents report spending (issue 28, ADR 0051). usage_turns holds one
-- row per report: a turn's token counts from its session/prompt response,
-- or the cost a usage_update added to its session's cumulative cost
-- (cost in millionths of the currency, so sums are exact). task_usage
-- holds, for a task that spent anything or has a budget, its own sums and
-- its subtree's (its own included), kept by the writer of every report,
-- never computed when read; and the task's own budget.
CREATE TABLE usage_turns (
    id          INTEGER PRIMARY KEY,
    task_id     TEXT NOT NULL REFERENCES tasks(id),
    session_id  TEXT NOT NULL DEFAULT '',
    profile     TEXT NOT NULL DEFAULT '',
    at          INTEGER NOT NULL,
    input       INTEGER NOT NULL DEFAULT 0,
    output      INTEGER NOT NULL DEFAULT 0,
    thought     INTEGER NOT NULL DEFAULT 0,
    cache_read  INTEGER NOT NULL DEFAULT 0,
    cache_write INTEGER NOT NULL DEFAULT 0,
    tokens      INTEGER NOT NULL DEFAULT 0,
    cost_micros INTEGER NOT NULL DEFAULT 0,
    currency    TEXT NOT NULL DEFAULT '',
    -- 1 for a turn's prompt response (a turn that reported), 0 for a
    -- usage_update
    turn        INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX usage_turns_at ON usage_turns(at);
CREATE INDEX usage_turns_session ON usage_turns(session_id);

CREATE TABLE task_usage (
    task_id          TEXT PRIMARY KEY REFERENCES tasks(id),
    input            INTEGER NOT NULL DEFAULT 0,
    output           INTEGER NOT NULL DEFAULT 0,
    thought          INTEGER NOT NULL DEFAULT 0,
    cache_read       INTEGER NOT NULL DEFAULT 0,
    cache_write      INTEGER NOT NULL DEFAULT 0,
    tokens           INTEGER NOT NULL DEFAULT 0,
    cost_micros      INTEGER NOT NULL DEFAULT 0,
    currency         TEXT NOT NULL DEFAULT '',
    turns            INTEGER NOT NULL DEFAULT 0,
    tree_tokens      INTEGER NOT NULL DEFAULT 0,
    tree_cost_micros INTEGER NOT NULL DEFAULT 0,
    tree_currency    TEXT NOT NULL DEFAULT '',
    context_used     INTEGER NOT NULL DEFAULT 0,
    context_size     INTEGER NOT NULL DEFAULT 0,
    -- the task's own budget: kind '' (none), 'cost' (budget_value in
    -- millionths of budget_currency) or 'tokens'
    budget_kind      TEXT NOT NULL DEFAULT '',
    budget_value     INTEGER NOT NULL DEFAULT 0,
    budget_currency  TEXT NOT NULL DEFAULT '',
    budget_by        TEXT NOT NULL DEFAULT '',
    -- the 80% notice went out, the budget was reached (both cleared when
    -- the budget is raised past them)
    budget_noticed   INTEGER NOT NULL DEFAULT 0,
    budget_reached   INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
