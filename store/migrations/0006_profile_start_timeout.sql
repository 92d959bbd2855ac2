-- A profile's own bound on its agent's start (initialize and session
-- setup), as a Go duration ("3m"); empty uses the daemon-wide default.
ALTER TABLE profiles ADD COLUMN start_timeout TEXT NOT NULL DEFAULT '';
