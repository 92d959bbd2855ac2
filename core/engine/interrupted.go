package engine

import (
	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/store"
)

// interruptedEnd is the end of a session a daemon exit cut short:
// cancelled, its reason for people, and the flag code decides on (a task
// is Interrupted by it, never by the reason's text; ADR 0058).
func interruptedEnd(why string) store.SessionUpdate {
	st := string(core.SessionCancelled)
	reason := core.SessionInterruptedPrefix + why
	return store.SessionUpdate{State: &st, Error: &reason, Interrupted: true}
}
