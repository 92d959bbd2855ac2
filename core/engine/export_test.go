package engine

// OnLoopEnd has f called each time a task's turn loop ends, so in-process
// tests wait for the moment after which nothing more is delivered.
func OnLoopEnd(e *Engine, f func(id string)) { e.loopEnded = f }
