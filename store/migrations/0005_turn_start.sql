-- When a session's current (or last) turn began, for elapsed-time displays.
ALTER TABLE sessions ADD COLUMN turn_started_at INTEGER NOT NULL DEFAULT 0;
