-- A confined agent's network (issue 36): network is '' (the container
-- engine's default; bwrap shares the host's), 'none' or 'host'; forwards
-- are host loopback ports (a JSON array of integers) the agent reaches at
-- its own through a socket (ADR 0074). no_network stays: it is 'none'.
ALTER TABLE profiles ADD COLUMN network TEXT NOT NULL DEFAULT '' CHECK (network IN ('', 'none', 'host'));
ALTER TABLE profiles ADD COLUMN forwards TEXT NOT NULL DEFAULT '[]';
