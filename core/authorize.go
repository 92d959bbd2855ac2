package core

// IsDirectParent reports whether the task parentID is child's direct
// parent. Only the direct parent steers a task (interrupts it, stops it,
// answers its parent questions); a grandparent or a sibling does not.
func IsDirectParent(parentID string, child Task) bool {
	return child.ParentID != "" && child.ParentID == parentID
}

// MayInterrupt reports whether a may interrupt t's running turn: a person
// always; an agent only when it works t's direct parent. The engine's
// authorizer and the TUI's message dialog both ask it, so the toggle the
// TUI offers is the rule the engine enforces.
func MayInterrupt(a Actor, t Task) bool {
	switch a.Kind {
	case ActorPerson:
		return true
	case ActorAgent:
		return IsDirectParent(a.TaskID, t)
	}
	return false
}
