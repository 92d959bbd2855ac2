package engine

// Host faults (docs/hosts.md, "Faults"; ADR 0053): a run whose ssh
// connection is lost mid-turn is interrupted, not failed; its prompt goes
// back to the front of the queue, and the next launch of a task on that
// host waits, showing `host NAME unreachable since …`, while it reconnects
// with a bounded backoff, then resumes the agent's session (ADR 0011).

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/hosts"
	"github.com/kandev/kandev/store"
)

// Reconnection bounds: the first wait, the longest, and how long a host
// may stay unreachable before the runs waiting on it fail (and climb, ADR
// 0007) with ssh's error, as a start on an unreachable host does.
const (
	reconnectFirst  = 500 * time.Millisecond
	reconnectMax    = 10 * time.Second
	reconnectGiveUp = 15 * time.Minute
	// reconnectAttempt bounds one login (an unreachable address may
	// otherwise hang until the TCP timeout).
	reconnectAttempt = 30 * time.Second
)

// lostExitWait bounds the wait, after a failed prompt, for the session's
// ssh to exit and so say whether the connection was lost.
const lostExitWait = 5 * time.Second

// A prompt whose turn a lost connection cut this many times in a row is a
// failure after all: an agent that takes its ssh session down with it
// (ssh reports a remote signal as 255 too) must not loop on resume.
const lossLimit = 3

// hostFaults is what the engine knows of hosts whose connection a run
// lost: since when each is unreachable, the sessions whose processes are
// to be ended there once it is back, and each task's losses in a row.
type hostFaults struct {
	mu     sync.Mutex
	down   map[string]*hostOutage // by host name
	losses map[string]promptLoss  // by task id
}

// promptLoss counts how many times in a row a lost connection cut the
// same prompt (by its text, which its redeliveries carry unchanged).
type promptLoss struct {
	prompt string
	count  int
}

type hostOutage struct {
	since time.Time
	// leftover: sessions cut by the loss, whose processes on the host the
	// teardown could not reach; ended there at the reconnection.
	leftover []leftoverSession
}

type leftoverSession struct {
	remote    *hosts.Remote
	sessionID string
}

func unreachableSince(host string, since time.Time) string {
	return fmt.Sprintf("host %s unreachable since %s", host, since.UTC().Format(time.RFC3339))
}

// hostLostLocked handles a turn whose prompt failed because the run's ssh
// connection went: the prompt is queued again at the front, the session
// ends interrupted (not failed, so nothing climbs), and the host is marked
// unreachable, so the next launch on it waits for the reconnection. It
// reports false for any other failure. rt.mu must be held; the caller
// runs after once it let go (the announcement and the note).
func (e *Engine) hostLostLocked(run *liveRun, t core.Task, promptErr error) (after func(), ok bool) {
	r := run.remote
	if promptErr == nil || r == nil || run.ended || e.isClosing() || !r.LostAfterExit(lostExitWait) {
		return nil, false
	}
	now := time.Now().UTC()
	ctx := context.Background()
	prompt := e.cutPrompt(ctx, t.ID, run.sessionID)
	f := &e.faults
	f.mu.Lock()
	if f.losses == nil {
		f.losses = map[string]promptLoss{}
	}
	l := f.losses[t.ID]
	if l.prompt != prompt {
		l = promptLoss{prompt: prompt}
	}
	if l.count++; l.count >= lossLimit {
		delete(f.losses, t.ID)
		f.mu.Unlock()
		return nil, false // the turn fails as any other does
	}
	f.losses[t.ID] = l
	if f.down == nil {
		f.down = map[string]*hostOutage{}
	}
	o := f.down[t.Host]
	if o == nil {
		o = &hostOutage{since: now}
		f.down[t.Host] = o
	}
	o.leftover = append(o.leftover, leftoverSession{remote: r, sessionID: run.sessionID})
	since := o.since
	f.mu.Unlock()

	end := interruptedEnd("lost its connection to host " + t.Host + " mid-turn")
	reason := *end.Error
	// The requeue and the session's end are one transaction, as in
	// interruptRun: a crash between them must not queue the prompt twice.
	c, err := e.tx(ctx, func(tx *store.Tx, _ *changes) error {
		if err := e.requeueOpenPrompt(ctx, tx.Queries, t.ID, run.sessionID); err != nil {
			return err
		}
		if err := tx.UpdateSession(ctx, run.sessionID, end, now); err != nil {
			return err
		}
		return tx.RevokeSessionTokens(ctx, run.sessionID, now)
	})
	if err != nil {
		e.log.Error("requeue the prompt of a turn a lost connection cut", "task", t.ID, "err", err)
	}
	e.endRunLocked(run, core.SessionCancelled, reason)
	e.log.Warn("lost the connection to a host mid-turn", "task", t.ID, "host", t.Host, "session", run.sessionID)
	return func() {
		c.touch(t.ID)
		e.announce(c)
		e.note(ctx, t.ID, run.sessionID, core.MsgStatus, "kandev",
			fmt.Sprintf("host %s: the connection was lost mid-turn (%s); reconnecting, then the agent's session resumes and the cut prompt is delivered again",
				t.Host, since.Format(time.RFC3339)), map[string]any{"interrupted": true, "host_lost": t.Host})
	}, true
}

// awaitHost holds a launch on a host whose connection was lost until it is
// back: the task shows `host NAME unreachable since …` meanwhile, and a
// login is tried again with a growing wait (reconnectFirst doubling to
// reconnectMax). It returns nil to go on (the host is back, or it stayed
// away past reconnectGiveUp and the launch then fails with ssh's error),
// or errFenced when the task was stopped or the daemon is closing. A host
// not known to be down costs nothing here.
func (e *Engine) awaitHost(rt *taskRuntime, fence uint64, t core.Task) error {
	f := &e.faults
	f.mu.Lock()
	o := f.down[t.Host]
	var since time.Time
	if o != nil {
		since = o.since
	}
	f.mu.Unlock()
	if o == nil {
		return nil
	}
	wait := reconnectFirst
	timer := time.NewTimer(0) // the first try at once
	defer timer.Stop()
	// The task's events wake the wait, so a stop ends it at once rather
	// than at the next try.
	evs, unsub := e.bus.Subscribe(t.ID)
	defer unsub()
	for try := 0; ; {
		due := false
		select {
		case <-e.baseCtx.Done():
			return errFenced
		case _, ok := <-evs:
			if !ok {
				evs = nil
			}
		case <-timer.C:
			due = true
			try++
		}
		if e.isClosing() {
			return errFenced // the waiting reason stays for the next start
		}
		rt.mu.Lock()
		fenced := rt.fence != fence
		rt.mu.Unlock()
		if cur, err := e.storedTask(e.baseCtx, t.ID); fenced || err != nil || e.held(cur) != "" {
			// Stopped or archived meanwhile: no longer waiting on the host.
			e.clearUnserved(t.ID)
			return errFenced
		}
		if !due {
			continue // an event, no try due
		}
		if try == 2 {
			// Shown once the first try failed: a connection that comes
			// back at once is no wait worth a note.
			e.setUnserved(t.ID, unreachableSince(t.Host, since))
			e.refreshQuiet(t.ID)
		}
		actx, cancel := context.WithTimeout(e.baseCtx, reconnectAttempt)
		err := e.connectHost(actx, t.Host)
		cancel()
		if err == nil {
			e.hostBack(t.Host)
			return nil
		}
		if time.Since(since) > reconnectGiveUp {
			e.log.Warn("host still unreachable; giving up the reconnection", "host", t.Host, "since", since, "err", err)
			e.hostBack(t.Host) // the launch fails with ssh's error, and climbs
			return nil
		}
		e.log.Info("host unreachable; trying again", "host", t.Host, "in", wait, "err", err)
		timer.Reset(wait)
		wait = min(2*wait, reconnectMax)
	}
}

// hostBack ends the host's outage: whatever the lost sessions left on the
// host (the teardown could not reach it) is ended there now, by marker.
func (e *Engine) hostBack(host string) {
	f := &e.faults
	f.mu.Lock()
	o := f.down[host]
	delete(f.down, host)
	f.mu.Unlock()
	if o == nil {
		return
	}
	for _, l := range o.leftover {
		ctx, cancel := context.WithTimeout(e.baseCtx, reconnectAttempt)
		if err := l.remote.KillSession(ctx, l.sessionID, l.remote.RunDir()+"/run/"+l.sessionID+".sock"); err != nil {
			e.log.Warn("end a lost session's processes on the host", "host", host, "session", l.sessionID, "err", err)
		}
		cancel()
	}
}

// hostSweepTimeout bounds the startup sweep's work on one host: a host
// that cannot be reached does not hold the daemon's start for long.
const hostSweepTimeout = 30 * time.Second

// sweepHosts is the host part of sweepOrphans: for every session not
// recorded torn down whose task is on a host, the processes marked with
// its id there are ended (hosts.SweepSessions; the local ssh that carried
// it is the local sweep's). It returns how many it killed per session. A
// host that cannot be reached is logged and left: its agents then end on
// their input's end (the ssh that fed them is gone).
func (e *Engine) sweepHosts(ctx context.Context, open []store.Session) map[string]int {
	byHost := map[string][]string{}
	for _, s := range open {
		t, err := e.storedTask(ctx, s.TaskID)
		if err != nil || t.Host == "" {
			continue
		}
		byHost[t.Host] = append(byHost[t.Host], s.ID)
	}
	killed := map[string]int{}
	for name, ids := range byHost {
		h, err := e.db.GetHost(ctx, name)
		if err != nil {
			continue
		}
		target, err := hostTarget(h)
		if err != nil {
			continue
		}
		hctx, cancel := context.WithTimeout(ctx, hostSweepTimeout)
		for _, id := range ids {
			n, err := hosts.SweepSessions(hctx, e.hostPool, target, h.Dir, []string{id})
			if err != nil {
				e.log.Warn("startup sweep: could not end a session's processes on its host", "host", name, "session", id, "err", err)
				break // the host is unreachable, or the sweep fails there for all
			}
			if n > 0 {
				e.log.Warn("startup sweep: killed processes an earlier daemon left on a host", "host", name, "session", id, "processes", n)
				killed[id] += n
			}
		}
		cancel()
	}
	return killed
}

// cutPrompt is the text of the prompt the session's turn was cut on.
func (e *Engine) cutPrompt(ctx context.Context, taskID, sessionID string) string {
	last, ok, err := openPrompt(ctx, e.db.Queries, taskID, sessionID)
	if err != nil || !ok {
		return ""
	}
	return last.Text
}
