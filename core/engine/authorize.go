package engine

import "github.com/kandev/kandev/core"

// Who may act on which task. Every tool and command asks these rather than
// comparing actor kinds and task IDs itself, so a change to one rule is a
// change here (table tests in authorize_test.go; the integration tests of
// each command still prove the refusals end to end).

// personActs: a person acts (every CLI and TUI call is the operator's).
func personActs(a core.Actor) bool { return a.Kind == core.ActorPerson }

// external: the external MCP surface acts, which reads and creates but
// never steers a task.
func external(a core.Actor) bool { return a.Kind == core.ActorExternal }

// agentOf: a is the agent working the task taskID.
func agentOf(a core.Actor, taskID string) bool {
	return a.Kind == core.ActorAgent && a.TaskID == taskID
}

// directParent: a is the agent working t's direct parent.
func directParent(a core.Actor, t core.Task) bool {
	return a.Kind == core.ActorAgent && core.IsDirectParent(a.TaskID, t)
}

// steers: a's input to t is explicit: a person's, or its direct parent's.
// Only they interrupt t, and others' queued messages never crowd them out.
func steers(a core.Actor, t core.Task) bool { return personActs(a) || directParent(a, t) }

// above: a is the agent working a proper ancestor of the task taskID.
func (e *Engine) above(a core.Actor, taskID string) bool {
	return a.Kind == core.ActorAgent && e.isAncestor(a.TaskID, taskID)
}

// inSubtree: a is the agent working the task taskID or one of its
// ancestors.
func (e *Engine) inSubtree(a core.Actor, taskID string) bool {
	return agentOf(a, taskID) || e.above(a, taskID)
}

// holder: t is with a: a person it was handed to, or an agent whose
// session serves the role t is assigned to.
func (e *Engine) holder(a core.Actor, t core.Task) bool {
	hander := e.handerOf(a)
	return hander != "" && t.Assignee != nil && t.Assignee.String() == hander
}
