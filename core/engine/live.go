package engine

import (
	"sync"

	"github.com/kandev/kandev/core"
)

// liveRuns is the engine's memory of what runs now: each task's runtime
// (its lifecycle lock, turn loop state and run, runs.go taskRuntime), the
// live agent runs by session id, the hashes of their sessions' tokens (so
// an MCP call is authenticated without a database read) and whether the
// engine is closing.
//
// mu guards closing and the three maps, not what the values hold: a
// taskRuntime's fields are guarded by its own rt.mu, a liveRun's by its
// task's rt.mu. Invariants under mu:
//   - runtimes has at most one taskRuntime per task id, made on first use
//     and never removed, so a runtime pointer stays the task's for good;
//   - sessions holds exactly the runs registered and not yet released,
//     and tokens the token hashes of those same sessions;
//   - once closing is set nothing is registered and no goroutine joins the
//     engine's wait groups: Close takes its list of runs under mu, so a run
//     or a goroutine either makes that list or is refused.
//
// Lock order: a task's rt.mu, then mu (a run is registered and released
// under its rt.mu). mu is a leaf: nothing is locked and nothing that
// blocks is called while it is held.
type liveRuns struct {
	mu       sync.Mutex
	closing  bool
	runtimes map[string]*taskRuntime
	sessions map[string]*liveRun
	tokens   map[string]core.Actor
}

func newLiveRuns() liveRuns {
	return liveRuns{runtimes: map[string]*taskRuntime{}, sessions: map[string]*liveRun{}, tokens: map[string]core.Actor{}}
}

// runtime returns task id's runtime, made on first use.
func (l *liveRuns) runtime(id string) *taskRuntime {
	l.mu.Lock()
	defer l.mu.Unlock()
	rt := l.runtimes[id]
	if rt == nil {
		rt = &taskRuntime{id: id, permSem: make(chan struct{}, 1)}
		l.runtimes[id] = rt
	}
	return rt
}

// register makes run live and its token hash its caller's; false, and
// nothing registered, once the engine is closing.
func (l *liveRuns) register(run *liveRun, hash string, caller core.Actor) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return false
	}
	l.sessions[run.sessionID] = run
	l.tokens[hash] = caller
	return true
}

// release forgets a run and revokes its session's tokens.
func (l *liveRuns) release(sessionID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.sessions, sessionID)
	for h, a := range l.tokens {
		if a.SessionID == sessionID {
			delete(l.tokens, h)
		}
	}
}

// session is the live run of a session, or nil.
func (l *liveRuns) session(id string) *liveRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sessions[id]
}

// caller is who a live session's token hash stands for.
func (l *liveRuns) caller(hash string) (core.Actor, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, ok := l.tokens[hash]
	return a, ok
}

// count is the number of live runs.
func (l *liveRuns) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.sessions)
}

// runs lists the live runs, in no order.
func (l *liveRuns) runs() []*liveRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*liveRun, 0, len(l.sessions))
	for _, r := range l.sessions {
		out = append(out, r)
	}
	return out
}

// unlessClosing runs join under mu unless the engine is closing, and
// reports whether it ran: a goroutine that joins one of the engine's wait
// groups in join is then waited for by Close. join must not block.
func (l *liveRuns) unlessClosing(join func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return false
	}
	join()
	return true
}

// close marks the engine closing and returns the runs live at that
// moment; first is false when it was closing already.
func (l *liveRuns) close() (runs []*liveRun, first bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return nil, false
	}
	l.closing = true
	for _, r := range l.sessions {
		runs = append(runs, r)
	}
	return runs, true
}

// isClosing reports whether the engine is closing.
func (l *liveRuns) isClosing() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closing
}
