package engine

// clearedAgentEnv empties, in every agent's environment, what would point
// it at the operator's side of the daemon: the home (whose socket serves
// the operator's routes), and a socket or token the daemon itself may have
// inherited. An agent reaches kandev only through the MCP server it is
// given, whose environment carries the agents' socket and its own token.
// They are set empty rather than unset because the agent runtime appends
// to the daemon's environment, and for an environment the last value of a
// name wins; kandev reads an empty value as unset. See docs/security.md.
var clearedAgentEnv = []string{"KANDEV_HOME=", "KANDEV_SOCKET=", "KANDEV_TOKEN="}
