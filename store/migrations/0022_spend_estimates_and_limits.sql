-- Mid-turn estimates and limits per period (issue 37, ADR 0077).
--
-- An agent that reports no usage until its turn ends is counted mid-turn
-- by an estimate from the text it streams (4 bytes a token): a
-- usage_turns row with estimate_key set (its session and turn), grown as
-- the turn streams, deleted when the agent's own figure for that turn
-- comes. est_tokens and tree_est_tokens are how much of tokens and
-- tree_tokens is such an estimate.
ALTER TABLE usage_turns ADD COLUMN estimate_key TEXT NOT NULL DEFAULT '';
CREATE INDEX usage_turns_estimate ON usage_turns(estimate_key) WHERE estimate_key != '';
ALTER TABLE task_usage ADD COLUMN est_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE task_usage ADD COLUMN tree_est_tokens INTEGER NOT NULL DEFAULT 0;
-- The role a report's task was assigned to when it spent ('' for none):
-- a role's limit counts its reports.
ALTER TABLE usage_turns ADD COLUMN role TEXT NOT NULL DEFAULT '';

-- Spend limits per period a person set with kandev limit set: scope
-- 'home', 'profile' or 'role' (name the profile's or role's), period
-- 'day' or 'week' (UTC: ADR 0077), an amount as budgets have (kind
-- 'cost', value in millionths of currency, or 'tokens').
CREATE TABLE spend_limits (
    scope      TEXT NOT NULL,
    name       TEXT NOT NULL DEFAULT '',
    period     TEXT NOT NULL,
    kind       TEXT NOT NULL,
    value      INTEGER NOT NULL,
    currency   TEXT NOT NULL DEFAULT '',
    set_by     TEXT NOT NULL DEFAULT '',
    set_at     INTEGER NOT NULL,
    PRIMARY KEY (scope, name, period)
) WITHOUT ROWID;

-- A limit reached in a window (its start, Unix nanoseconds): the person
-- was told once for it. Kept so a restart inside the window neither
-- tells again nor forgets that turns are held.
CREATE TABLE spend_limit_reached (
    limit_key    TEXT NOT NULL,
    window_start INTEGER NOT NULL,
    at           INTEGER NOT NULL,
    detail       TEXT NOT NULL DEFAULT '',
    -- the task whose report reached it: the one that climbed to a person
    task_id      TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (limit_key, window_start)
) WITHOUT ROWID;
