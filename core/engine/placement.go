package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/hosts"
	"github.com/kandev/kandev/core/workspace"
	"github.com/kandev/kandev/store"
)

// Placement (docs/hosts.md): a run on a host takes one of its slots
// (--max-agents) from placement until its run is released. A task created
// with --host auto is stored with host "auto" and placed at its first
// run on the host with the most free slots, then fixed there. A run that
// finds no free slot waits like an unserved one ("host slots full: …"),
// and the runs waiting are woken, in creation order, whenever a slot
// frees: nothing polls.

// hostsFullPrefix starts the waiting reason of a run with no free slot;
// noHostsReason is a --host auto run's when there is no host at all (it
// waits as for a slot, and the next host added starts it).
const (
	hostsFullPrefix = "host slots full: "
	noHostsReason   = "--host auto: no hosts (kandev host add)"
)

type placement struct {
	mu sync.Mutex
	// reserved: tasks placed whose run is not registered yet (a launch
	// between placement and the live runs), by host.
	reserved map[string]string
	// waiters: tasks whose last placement found no free slot.
	waiters map[string]hostWaiter
	// gen counts releases and placements, so a waiter whose placement
	// looked before one knows it missed a wake-up (its loop was still
	// busy when it came) and looks again.
	gen uint64
}

type hostWaiter struct {
	created time.Time
	host    string // the host asked for, or "auto"
	gen     uint64
	reason  string // the latest placement's
}

// wants reports whether the waiter could take a slot of host h.
func (w hostWaiter) wants(h string) bool { return w.host == hostAuto || w.host == h }

// placeRun takes a slot for the task's run, placing a task of host
// "auto" first. A local task needs none. Its error is an unservedError
// (the run waits) or the host's record missing.
func (e *Engine) placeRun(ctx context.Context, t core.Task) (core.Task, error) {
	if t.Host == "" {
		return t, nil
	}
	if t.Host == hostAuto {
		if owner, ok := e.worktreeOwner(t); ok && owner.Host != hostAuto {
			// Its worktree lives where its owner runs: so does it, in a
			// slot of that host like any task given it by name.
			var err error
			if t, err = e.placeOn(ctx, t, owner.Host); err != nil || t.Host == "" {
				return t, err
			}
		}
	}
	var hs []store.Host
	if t.Host == hostAuto {
		all, err := e.db.ListHosts(ctx)
		if err != nil {
			return t, mapStoreErr(err, "hosts")
		}
		if len(all) == 0 {
			e.place.mu.Lock()
			w := e.hostWaiterLocked(t, noHostsReason)
			e.place.mu.Unlock()
			return t, &unservedError{reason: w.reason}
		}
		hs = all
	} else {
		h, err := e.db.GetHost(ctx, t.Host)
		if err != nil {
			return t, mapStoreErr(err, "host "+t.Host)
		}
		hs = []store.Host{h}
	}

	p := &e.place
	p.mu.Lock()
	occ := e.hostOccupancy()
	ahead := e.waitersAhead(t)
	best, bestFree := "", -1
	var full []string
	for _, h := range hs {
		earlier := 0
		for _, w := range ahead {
			if w.wants(h.Name) {
				earlier++
			}
		}
		free := 1 << 30 // unbounded
		if h.MaxAgents > 0 {
			free = h.MaxAgents - occ[h.Name]
		}
		if free-earlier <= 0 {
			d := fmt.Sprintf("%s (%d/%d agents", h.Name, occ[h.Name], h.MaxAgents)
			if earlier > 0 {
				d += fmt.Sprintf(", %d waiting before this task", earlier)
			}
			full = append(full, d+")")
			continue
		}
		if free-earlier > bestFree {
			best, bestFree = h.Name, free-earlier
		}
	}
	if best == "" {
		w := e.hostWaiterLocked(t, hostsFullPrefix+strings.Join(full, ", "))
		p.mu.Unlock()
		return t, &unservedError{reason: w.reason}
	}
	delete(p.waiters, t.ID)
	if p.reserved == nil {
		p.reserved = map[string]string{}
	}
	p.reserved[t.ID] = best
	p.gen++ // the waiters' reasons changed too
	more := len(p.waiters) > 0
	p.mu.Unlock()
	if more {
		// Slots may be left for the next in line.
		e.wakeHostWaitersAsync()
	}
	if t.Host == hostAuto {
		return e.placeOn(ctx, t, best)
	}
	return t, nil
}

// hostWaiterLocked records the task as waiting for a slot, for reason.
// p.mu is held.
func (e *Engine) hostWaiterLocked(t core.Task, reason string) hostWaiter {
	p := &e.place
	w := p.waiters[t.ID]
	if w.created.IsZero() {
		w = hostWaiter{created: t.CreatedAt, host: t.Host}
	}
	w.gen = p.gen
	w.reason = reason
	if p.waiters == nil {
		p.waiters = map[string]hostWaiter{}
	}
	p.waiters[t.ID] = w
	return w
}

// placeOn fixes a task of host "auto" on host h ("" for this machine).
func (e *Engine) placeOn(ctx context.Context, t core.Task, h string) (core.Task, error) {
	err := e.commit(ctx, func(tx *store.Tx, c *changes) error {
		c.touch(t.ID)
		if h != "" {
			// In the transaction: a host removed meanwhile cannot get it.
			if _, err := tx.GetHost(ctx, h); err != nil {
				return err
			}
		}
		return tx.SetTaskHost(ctx, t.ID, h, time.Now().UTC())
	})
	if err != nil {
		e.unreserveHost(t.ID)
		return t, mapStoreErr(err, "place task "+t.ID)
	}
	e.note(ctx, t.ID, "", core.MsgStatus, "kandev", "placed "+hostWord(h)+" (--host auto)", map[string]any{"host": hostOrLocal(h)})
	t.Host = h
	return t, nil
}

// unreserveHost ends a placement's reservation once its launch returned:
// registered, the run holds the slot itself; failed, the slot is free.
func (e *Engine) unreserveHost(taskID string) {
	p := &e.place
	p.mu.Lock()
	_, had := p.reserved[taskID]
	delete(p.reserved, taskID)
	p.mu.Unlock()
	if !had {
		return
	}
	running := false
	for _, r := range e.live.runs() {
		if r.rt.id == taskID {
			running = true
		}
	}
	if !running {
		e.hostSlotFreed()
	}
}

// hostOccupancy counts, by host, the tasks with a live run there or a
// placement on its way to one. p.mu is held.
func (e *Engine) hostOccupancy() map[string]int {
	seen := map[string]string{}
	for id, h := range e.place.reserved {
		seen[id] = h
	}
	runs := e.live.runs()
	ids := make([]string, 0, len(runs))
	for _, r := range runs {
		ids = append(ids, r.rt.id)
	}
	for _, id := range ids {
		if t, ok := e.cached(id); ok && t.Host != "" {
			seen[id] = t.Host
		}
	}
	occ := map[string]int{}
	for _, h := range seen {
		occ[h]++
	}
	return occ
}

// waitersAhead lists the tasks still waiting for a slot that were created
// before t (creation order, ties by ID), dropping those no longer waiting.
// p.mu is held.
func (e *Engine) waitersAhead(t core.Task) []hostWaiter {
	var out []hostWaiter
	for id, w := range e.place.waiters {
		if id == t.ID {
			continue
		}
		if !e.stillWaiting(id) {
			delete(e.place.waiters, id)
			continue
		}
		if w.created.Before(t.CreatedAt) || (w.created.Equal(t.CreatedAt) && id < t.ID) {
			out = append(out, w)
		}
	}
	return out
}

// stillWaiting: the task waits for a slot and would start with one. Its
// waiting reason is recorded after its placement returned, so a reason
// not yet written ("") still counts as waiting for the slot: only another
// reason means it waits for something else.
func (e *Engine) stillWaiting(id string) bool {
	c, ok := e.cached(id)
	forSlot := c.Waiting == "" || strings.HasPrefix(c.Waiting, hostsFullPrefix) || c.Waiting == noHostsReason
	return ok && forSlot && c.Queued > 0 && e.held(c) == ""
}

// hostSlotFreed wakes the runs waiting for a slot: one ended, or a host
// was added (AddHost).
func (e *Engine) hostSlotFreed() {
	e.place.mu.Lock()
	e.place.gen++
	n := len(e.place.waiters)
	e.place.mu.Unlock()
	if n > 0 {
		e.wakeHostWaitersAsync()
	}
}

// wakeHostWaitersAsync kicks the waiting tasks in creation order, off
// the caller's locks (a run is released under its task's lock).
func (e *Engine) wakeHostWaitersAsync() {
	if !e.live.unlessClosing(func() { e.wg.Add(1) }) {
		return
	}
	go func() {
		defer e.wg.Done()
		for _, id := range e.hostWaiterIDs() {
			e.kick(id)
		}
	}()
}

func (e *Engine) hostWaiterIDs() []string {
	e.place.mu.Lock()
	defer e.place.mu.Unlock()
	ids := make([]string, 0, len(e.place.waiters))
	for id := range e.place.waiters {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := e.place.waiters[ids[i]], e.place.waiters[ids[j]]
		if !a.created.Equal(b.created) {
			return a.created.Before(b.created)
		}
		return ids[i] < ids[j]
	})
	return ids
}

// recheckPlacement runs once a run that waits for a slot is recorded as
// waiting, its loop no longer busy: a slot freed since its placement
// looked (a wake-up its busy loop could not take) starts it now. A loop
// that recorded its reason after a later one did (both released the
// task before recording) leaves the latest reason shown.
func (e *Engine) recheckPlacement(taskID string) {
	e.place.mu.Lock()
	w, ok := e.place.waiters[taskID]
	missed := ok && w.gen != e.place.gen
	e.place.mu.Unlock()
	if missed {
		e.kick(taskID)
		return
	}
	if c, found := e.cached(taskID); ok && found && c.Waiting != w.reason {
		e.setUnserved(taskID, w.reason)
	}
}

// releasedOnHost is called when a run leaves the live runs: if its task is
// on a host, a slot there is free.
func (e *Engine) releasedOnHost(taskID string) {
	if t, ok := e.cached(taskID); ok && t.Host != "" {
		e.hostSlotFreed()
	}
}

// hostSetup is what the task's worktree gets on its host as it does here:
// .worktreeinclude's files, .kandev/setup (docs/hosts.md).
func (e *Engine) hostSetup(ctx context.Context, w core.Workspace) *hosts.Setup {
	wt := workspace.Worktree{Repo: w.Repo, Dir: w.Dir, Branch: w.Branch}
	return &hosts.Setup{Included: e.ws.Included(ctx, w.Dir), Script: workspace.SetupScript(wt), Base: w.Base,
		Timeout: e.ws.SetupTimeout}
}

// hostPrepared sorts a host's preparation into the setup's output and
// failure (reported as a local setup's) and any other failure (the
// host's: unreachable, the push).
func hostPrepared(r *hosts.Remote, err error) (string, error, error) {
	var se *workspace.SetupError
	if errors.As(err, &se) {
		return r.SetupOutput, err, nil
	}
	return r.SetupOutput, nil, err
}
