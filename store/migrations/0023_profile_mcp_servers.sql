-- A profile's own MCP servers (issue 36, ADR 0078): a JSON array of
-- {name, command, args, env} the agent is given in session/new after
-- kandev's own and starts inside its sandbox.
ALTER TABLE profiles ADD COLUMN mcp_servers TEXT NOT NULL DEFAULT '[]';
