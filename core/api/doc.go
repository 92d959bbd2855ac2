// Package api is kandev's client API: what a front end calls (Client, by
// area: TaskClient, MessageClient, QuestionClient, WorkspaceClient,
// RoleClient; HostClient, Spender and ToolHost apart) and the inputs and
// results of those calls. The domain it speaks of (a Task, its Status, a
// Ref, a Profile, the errors) is package core's, which knows nothing of
// this one: the engine's areas serve these operations, the daemon client
// (core/daemonclient) implements them over the socket, and the commands,
// the TUI and kandev mcp call them.
package api
