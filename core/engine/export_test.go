package engine

// OnLoopEnd has f called each time a task's turn loop ends, so in-process
// tests wait for the moment after which nothing more is delivered.
func OnLoopEnd(e *Engine, f func(id string)) { e.loopEnded = f }

// LoopRunning reports whether the task's turn loop runs now.
func LoopRunning(e *Engine, id string) bool {
	rt := e.runtime(id)
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.busy
}
