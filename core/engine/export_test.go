package engine

import (
	"context"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/store"
)

// OnLoopEnd has f called each time a task's turn loop ends, so in-process
// tests wait for the moment after which nothing more is delivered.
func OnLoopEnd(e *Engine, f func(id string)) { e.Turns.loopEnded = f }

// LoopRunning reports whether the task's turn loop runs now.
func LoopRunning(e *Engine, id string) bool {
	rt := e.Runs.runtime(id)
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.busy
}

// RenderQueued is the text the agent would read for a queued item.
func RenderQueued(e *Engine, t core.Task, it store.QueueItem) string {
	return e.Turns.renderItem(context.Background(), t, it)
}
