-- The web inbox (issue 40, ADR 0079): paired devices, one-time pairing
-- codes and what each device did. Only hashes of the codes and of the
-- device credentials are kept (sha256, hex): the database never holds
-- what a browser presents.
CREATE TABLE web_devices (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    created_at   INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL DEFAULT 0,
    revoked_at   INTEGER
);

CREATE TABLE web_pair_codes (
    code_hash  TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at    INTEGER
);

-- Every change made from the web inbox: the engine records the person
-- as the actor (person:operator), this row says via which device.
CREATE TABLE web_actions (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    device_id TEXT NOT NULL REFERENCES web_devices(id),
    action    TEXT NOT NULL,
    task_id   TEXT NOT NULL,
    at        INTEGER NOT NULL
);
CREATE INDEX web_actions_device ON web_actions(device_id, seq);
