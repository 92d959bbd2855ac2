-- A profile's own permission policies (ADR 0024): how kandev answers its
-- agent's session/request_permission on a normal task (allow, deny, ask)
-- and on an autopilot task (allow, deny). Empty follows the environment,
-- else config.toml, else the built-in default.
ALTER TABLE profiles ADD COLUMN permission TEXT NOT NULL DEFAULT '';
ALTER TABLE profiles ADD COLUMN autopilot_permission TEXT NOT NULL DEFAULT '';
-- An "allow always" is remembered in the permission entry that records it
-- ($.remember, the tool key); a request looks it up by task.
CREATE INDEX messages_permission ON messages(task_id) WHERE kind = 'permission';
