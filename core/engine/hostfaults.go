package engine

// Host faults (docs/hosts.md, "Faults"; ADR 0053): a run whose ssh
// connection is lost mid-turn is interrupted, not failed; its prompt goes
// back to the front of the queue, and the next launch of a task on that
// host waits, showing `host NAME unreachable since …`, while it reconnects
// with a bounded backoff, then resumes the agent's session (ADR 0011).

import (
	"context"
	"errors"
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
// lost: since when each is unreachable (kept in the store too, so a
// restarted daemon goes on waiting: loadHostFaults), and each task's
// losses in a row. The sessions whose processes are to be ended on a host
// once it is back are the store's (host_sweeps).
type hostFaults struct {
	mu     sync.Mutex
	down   map[string]*hostOutage // by host name
	losses map[string]promptLoss  // by task id
	// unswept: hosts not known down with sessions left to sweep there (a
	// wait that gave up, a start that could not reach them): swept by
	// the next launch there that reaches the host.
	unswept map[string]bool
}

// promptLoss counts how many times in a row a lost connection cut the
// same prompt (by its text, which its redeliveries carry unchanged).
type promptLoss struct {
	prompt string
	count  int
}

type hostOutage struct {
	since time.Time
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
func (ho *Hosts) hostLostLocked(run *liveRun, t core.Task, promptErr error) (after func(), ok bool) {
	r := run.remote
	if promptErr == nil || r == nil || run.ended || ho.k.isClosing() || !r.LostAfterExit(lostExitWait) {
		return nil, false
	}
	now := time.Now().UTC()
	ctx := context.Background()
	prompt := ho.cutPrompt(ctx, t.ID, run.sessionID)
	f := &ho.faults
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
	since := o.since
	f.mu.Unlock()

	end := interruptedEnd("lost its connection to host " + t.Host + " mid-turn")
	reason := *end.Error
	// The requeue and the session's end are one transaction, as in
	// interruptRun: a crash between them must not queue the prompt twice.
	c, err := ho.k.tx(ctx, func(tx *store.Tx, _ *changes) error {
		if err := ho.requeueOpenPrompt(ctx, tx.Queries, t.ID, run.sessionID); err != nil {
			return err
		}
		if err := tx.UpdateSession(ctx, run.sessionID, end, now); err != nil {
			return err
		}
		// The session's local side is torn down as any run's; its
		// processes on the host, which the teardown cannot reach, are
		// swept there once it is back, by this daemon or the next
		// (hostBack, sweepHosts), and the outage outlives a restart.
		if err := tx.AddHostSweep(ctx, t.Host, run.sessionID, now); err != nil {
			return err
		}
		if err := tx.SetHostUnreachable(ctx, t.Host, since); err != nil {
			return err
		}
		return tx.RevokeSessionTokens(ctx, run.sessionID, now)
	})
	if err != nil {
		ho.k.log.Error("requeue the prompt of a turn a lost connection cut", "task", t.ID, "err", err)
	}
	ho.endRunLocked(run, core.SessionCancelled, reason)
	ho.k.log.Warn("lost the connection to a host mid-turn", "task", t.ID, "host", t.Host, "session", run.sessionID)
	return func() {
		c.touch(t.ID)
		ho.k.announce(c)
		ho.k.note(ctx, t.ID, run.sessionID, core.MsgStatus, "kandev",
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
func (ho *Hosts) awaitHost(rt *taskRuntime, fence uint64, t core.Task) error {
	f := &ho.faults
	f.mu.Lock()
	o := f.down[t.Host]
	var since time.Time
	if o != nil {
		since = o.since
	}
	unswept := f.unswept[t.Host]
	f.mu.Unlock()
	if o == nil {
		if unswept {
			// One login, which the launch makes anyway: reached, the
			// host gets its leftovers swept first.
			actx, cancel := context.WithTimeout(ho.k.baseCtx, reconnectAttempt)
			err := ho.connectHost(actx, t.Host)
			cancel()
			if err == nil {
				ho.hostBack(t.Host)
			}
		}
		return nil
	}
	return ho.reconnectHost(rt, fence, t, since)
}

// reconnectHost tries t's host again and again, backing off, until it
// answers, t no longer waits for it (stopped, archived, fenced, the
// daemon closing: errFenced), or the outage is older than
// reconnectGiveUp (the launch then fails with ssh's error).
func (ho *Hosts) reconnectHost(rt *taskRuntime, fence uint64, t core.Task, since time.Time) error {
	wait := reconnectFirst
	timer := time.NewTimer(0) // the first try at once
	defer timer.Stop()
	// The task's events wake the wait, so a stop ends it at once rather
	// than at the next try.
	evs, unsub := ho.k.bus.Subscribe(t.ID)
	defer unsub()
	for try := 0; ; {
		due := false
		select {
		case <-ho.k.baseCtx.Done():
			return errFenced
		case _, ok := <-evs:
			if !ok {
				evs = nil
			}
		case <-timer.C:
			due = true
			try++
		}
		if ho.k.isClosing() {
			return errFenced // the waiting reason stays for the next start
		}
		rt.mu.Lock()
		fenced := rt.fence != fence
		rt.mu.Unlock()
		if cur, err := ho.k.storedTask(ho.k.baseCtx, t.ID); fenced || err != nil || ho.held(cur) != "" {
			// Stopped or archived meanwhile: no longer waiting on the host.
			ho.k.clearUnserved(t.ID)
			return errFenced
		}
		if !due {
			continue // an event, no try due
		}
		if try == 2 {
			// Shown once the first try failed: a connection that comes
			// back at once is no wait worth a note.
			ho.k.setUnserved(t.ID, core.WaitHostUnreachable, unreachableSince(t.Host, since))
			ho.k.refreshQuiet(t.ID)
		}
		actx, cancel := context.WithTimeout(ho.k.baseCtx, reconnectAttempt)
		err := ho.connectHost(actx, t.Host)
		cancel()
		if err == nil {
			ho.hostBack(t.Host)
			return nil
		}
		if time.Since(since) > reconnectGiveUp {
			ho.k.log.Warn("host still unreachable; giving up the reconnection", "host", t.Host, "since", since, "err", err)
			ho.endOutage(t.Host) // the launch fails with ssh's error, and climbs
			ho.leftUnswept(t.Host)
			return nil
		}
		ho.k.log.Info("host unreachable; trying again", "host", t.Host, "in", wait, "err", err)
		timer.Reset(wait)
		wait = min(2*wait, reconnectMax)
	}
}

// hostBack ends the host's outage: whatever the lost sessions left on the
// host (the teardown could not reach it) is ended there now, by marker,
// those an earlier daemon recorded too.
func (ho *Hosts) hostBack(host string) {
	ctx, cancel := context.WithTimeout(ho.k.baseCtx, reconnectAttempt)
	defer cancel()
	var left error
	if sw, err := ho.k.db.HostSweeps(ctx); err == nil {
		var ids []string
		for _, s := range sw {
			if s.Host == host {
				ids = append(ids, s.SessionID)
			}
		}
		if h, err := ho.k.db.GetHost(ctx, host); err == nil && len(ids) > 0 {
			_, left = ho.sweepOnHost(ctx, h, ids, "a lost connection")
		}
	}
	ho.endOutage(host)
	if left != nil {
		ho.leftUnswept(host) // gone again at once: the next launch there tries
	}
}

// leftUnswept notes a host not known down whose lost sessions are still
// to sweep there.
func (ho *Hosts) leftUnswept(host string) {
	f := &ho.faults
	f.mu.Lock()
	if f.unswept == nil {
		f.unswept = map[string]bool{}
	}
	f.unswept[host] = true
	f.mu.Unlock()
}

// endOutage forgets the host's outage, here and in the store: the host is
// back, or the wait for it gave up (a later run tries it afresh).
func (ho *Hosts) endOutage(host string) {
	f := &ho.faults
	f.mu.Lock()
	delete(f.down, host)
	delete(f.unswept, host)
	f.mu.Unlock()
	if err := ho.k.db.SetHostUnreachable(context.Background(), host, time.Time{}); err != nil && !errors.Is(err, store.ErrNotFound) {
		ho.k.log.Warn("record a host reachable again", "host", host, "err", err)
	}
}

// loadHostFaults runs at start, after the sweep: an outage an earlier
// daemon recorded goes on, from its start, so the runs it resumes on the
// host wait for it (awaitHost) rather than fail at the first try.
func (ho *Hosts) loadHostFaults(ctx context.Context) error {
	hs, err := ho.k.db.ListHosts(ctx)
	if err != nil {
		return fmt.Errorf("load host outages: %w", err)
	}
	f := &ho.faults
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range hs {
		if h.UnreachableSince.IsZero() {
			continue
		}
		if f.down == nil {
			f.down = map[string]*hostOutage{}
		}
		f.down[h.Name] = &hostOutage{since: h.UnreachableSince}
		ho.k.log.Info("host unreachable at the last daemon's end; its runs wait for it", "host", h.Name, "since", h.UnreachableSince)
	}
	return nil
}

// sweepOnHost ends on the host every process of the given sessions, by
// marker, and forgets their sweep; it returns how many it killed of each,
// or the host's error (the sessions are then left to sweep).
func (ho *Hosts) sweepOnHost(ctx context.Context, h store.Host, ids []string, leftBy string) (map[string]int, error) {
	target, err := hostTarget(h)
	if err != nil {
		return nil, err
	}
	killed := map[string]int{}
	for _, id := range ids {
		n, err := hosts.SweepSessions(ctx, ho.hostPool, target, h.Dir, []string{id})
		if err != nil {
			ho.k.log.Warn("could not end a session's processes on its host", "host", h.Name, "session", id, "err", err)
			return killed, err // the host is unreachable, or the sweep fails there for all
		}
		if n > 0 {
			ho.k.log.Warn("killed processes "+leftBy+" left on a host", "host", h.Name, "session", id, "processes", n)
			killed[id] += n
		}
		if err := ho.k.db.DoneHostSweeps(ctx, []string{id}); err != nil {
			ho.k.log.Warn("forget a session swept on its host", "host", h.Name, "session", id, "err", err)
		}
	}
	return killed, nil
}

// hostSweepTimeout bounds the startup sweep's work on one host: a host
// that cannot be reached does not hold the daemon's start for long.
const hostSweepTimeout = 30 * time.Second

// sweepHosts is the host part of sweepOrphans: for every session not
// recorded torn down whose task is on a host, and every session a lost
// connection left on one (host_sweeps), the processes marked with its id
// there are ended (hosts.SweepSessions; the local ssh that carried it is
// the local sweep's). It returns how many it killed per session. A host
// that cannot be reached is logged and its sessions left to sweep when
// it is back (hostBack, or the next start); its agents meanwhile end on
// their input's end (the ssh that fed them is gone). A host reached
// ends the outage an earlier daemon recorded for it.
func (ho *Hosts) sweepHosts(ctx context.Context, open []store.Session) map[string]int {
	byHost := map[string][]string{}
	for _, s := range open {
		t, err := ho.k.storedTask(ctx, s.TaskID)
		if err != nil || t.Host == "" || t.Host == hostAuto {
			continue
		}
		byHost[t.Host] = append(byHost[t.Host], s.ID)
	}
	pending, err := ho.k.db.HostSweeps(ctx)
	if err != nil {
		ho.k.log.Warn("startup sweep: the sessions left on hosts", "err", err)
	}
	for _, p := range pending {
		byHost[p.Host] = append(byHost[p.Host], p.SessionID)
	}
	killed := map[string]int{}
	for name, ids := range byHost {
		h, err := ho.k.db.GetHost(ctx, name)
		if err != nil {
			continue
		}
		hctx, cancel := context.WithTimeout(ctx, hostSweepTimeout)
		// Recorded first: a session not swept now is swept later, its
		// local side being recorded torn down by this start.
		for _, id := range ids {
			if err := ho.k.db.AddHostSweep(hctx, name, id, time.Now().UTC()); err != nil {
				ho.k.log.Warn("startup sweep: record a session to sweep on its host", "host", name, "session", id, "err", err)
			}
		}
		n, err := ho.sweepOnHost(hctx, h, ids, "an earlier daemon")
		cancel()
		for id, k := range n {
			killed[id] += k
		}
		switch {
		case err == nil && !h.UnreachableSince.IsZero():
			ho.endOutage(name)
		case err != nil && h.UnreachableSince.IsZero():
			ho.leftUnswept(name) // (a host down is swept at its reconnection)
		}
	}
	return killed
}

// cutPrompt is the text of the prompt the session's turn was cut on.
func (ho *Hosts) cutPrompt(ctx context.Context, taskID, sessionID string) string {
	last, ok, err := openPrompt(ctx, ho.k.db.Queries, taskID, sessionID)
	if err != nil || !ok {
		return ""
	}
	return last.Text
}
