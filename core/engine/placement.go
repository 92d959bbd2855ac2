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

// A run with no free slot waits with cause core.WaitHostSlots; a --host
// auto run when there is no host at all, with core.WaitNoHosts (it waits
// as for a slot, and the next host added starts it).

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
	cause   core.WaitCause // the latest placement's, and its text
	reason  string
}

// wants reports whether the waiter could take a slot of host h.
func (w hostWaiter) wants(h string) bool { return w.host == hostAuto || w.host == h }

// placeRun takes a slot for the task's run, placing a task of host
// "auto" first. A local task needs none. Its error is an unservedError
// (the run waits) or the host's record missing.
func (ho *Hosts) placeRun(ctx context.Context, t core.Task) (core.Task, error) {
	if t.Host == "" {
		return t, nil
	}
	if t.Host == hostAuto {
		if owner, ok := ho.worktreeOwner(t); ok && owner.Host != hostAuto {
			// Its worktree lives where its owner runs: so does it, in a
			// slot of that host like any task given it by name.
			var err error
			if t, err = ho.placeOn(ctx, t, owner.Host); err != nil || t.Host == "" {
				return t, err
			}
		}
	}
	hs, err := ho.candidateHosts(ctx, t)
	if err != nil {
		return t, err
	}
	p := &ho.place
	p.mu.Lock()
	best, full := ho.pickHostLocked(t, hs)
	if best == "" {
		w := ho.place.waitLocked(t, core.WaitHostSlots, core.WaitHostSlotsPrefix+strings.Join(full, ", "))
		p.mu.Unlock()
		return t, &unservedError{cause: w.cause, reason: w.reason}
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
		ho.wakeHostWaitersAsync()
	}
	if t.Host == hostAuto {
		return ho.placeOn(ctx, t, best)
	}
	return t, nil
}

// candidateHosts are the hosts t may be placed on: every host for
// --host auto (none at all: t waits, unserved), else the one it names.
func (ho *Hosts) candidateHosts(ctx context.Context, t core.Task) ([]store.Host, error) {
	if t.Host != hostAuto {
		h, err := ho.k.db.GetHost(ctx, t.Host)
		if err != nil {
			return nil, mapStoreErr(err, "host "+t.Host)
		}
		return []store.Host{h}, nil
	}
	all, err := ho.k.db.ListHosts(ctx)
	if err != nil {
		return nil, mapStoreErr(err, "hosts")
	}
	if len(all) == 0 {
		ho.place.mu.Lock()
		w := ho.place.waitLocked(t, core.WaitNoHosts, core.WaitNoHostsText)
		ho.place.mu.Unlock()
		return nil, &unservedError{cause: w.cause, reason: w.reason}
	}
	return all, nil
}

// pickHostLocked is the placement rule: of hs, the host with the most
// slots free once the tasks waiting before t took theirs ("" when none
// has one, with why each is full). p.mu is held.
func (ho *Hosts) pickHostLocked(t core.Task, hs []store.Host) (best string, full []string) {
	occ := ho.hostOccupancy()
	ahead := ho.waitersAhead(t)
	bestFree := -1
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
	return best, full
}

// waitLocked records the task as waiting for a slot, for reason. p.mu is
// held.
func (p *placement) waitLocked(t core.Task, cause core.WaitCause, reason string) hostWaiter {
	w := p.waiters[t.ID]
	if w.created.IsZero() {
		w = hostWaiter{created: t.CreatedAt, host: t.Host}
	}
	w.gen = p.gen
	w.cause, w.reason = cause, reason
	if p.waiters == nil {
		p.waiters = map[string]hostWaiter{}
	}
	p.waiters[t.ID] = w
	return w
}

// placeOn fixes a task of host "auto" on host h ("" for this machine).
func (ho *Hosts) placeOn(ctx context.Context, t core.Task, h string) (core.Task, error) {
	err := ho.k.commit(ctx, func(tx *store.Tx, c *changes) error {
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
		ho.unreserveHost(t.ID)
		return t, mapStoreErr(err, "place task "+t.ID)
	}
	ho.k.note(ctx, t.ID, "", core.MsgStatus, "kandev", "placed "+hostWord(h)+" (--host auto)", map[string]any{"host": hostOrLocal(h)})
	t.Host = h
	return t, nil
}

// unreserveHost ends a placement's reservation once its launch returned:
// registered, the run holds the slot itself; failed, the slot is free.
func (ho *Hosts) unreserveHost(taskID string) {
	p := &ho.place
	p.mu.Lock()
	_, had := p.reserved[taskID]
	delete(p.reserved, taskID)
	p.mu.Unlock()
	if !had {
		return
	}
	running := false
	for _, r := range ho.k.live.runs() {
		if r.rt.id == taskID {
			running = true
		}
	}
	if !running {
		ho.hostSlotFreed()
	}
}

// hostOccupancy counts, by host, the tasks with a live run there or a
// placement on its way to one. p.mu is held.
func (ho *Hosts) hostOccupancy() map[string]int {
	seen := map[string]string{}
	for id, h := range ho.place.reserved {
		seen[id] = h
	}
	runs := ho.k.live.runs()
	ids := make([]string, 0, len(runs))
	for _, r := range runs {
		ids = append(ids, r.rt.id)
	}
	for _, id := range ids {
		if t, ok := ho.k.cached(id); ok && t.Host != "" {
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
func (ho *Hosts) waitersAhead(t core.Task) []hostWaiter {
	var out []hostWaiter
	for id, w := range ho.place.waiters {
		if id == t.ID {
			continue
		}
		if !ho.stillWaiting(id) {
			delete(ho.place.waiters, id)
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
func (ho *Hosts) stillWaiting(id string) bool {
	c, ok := ho.k.cached(id)
	forSlot := c.WaitCause == core.WaitNone || c.WaitCause.ForHostSlot()
	return ok && forSlot && c.Queued > 0 && ho.held(c) == ""
}

// hostSlotFreed wakes the runs waiting for a slot: one ended, or a host
// was added (AddHost).
func (ho *Hosts) hostSlotFreed() {
	ho.place.mu.Lock()
	ho.place.gen++
	n := len(ho.place.waiters)
	ho.place.mu.Unlock()
	if n > 0 {
		ho.wakeHostWaitersAsync()
	}
}

// wakeHostWaitersAsync kicks the waiting tasks in creation order, off
// the caller's locks (a run is released under its task's lock).
func (ho *Hosts) wakeHostWaitersAsync() {
	if !ho.k.live.unlessClosing(func() { ho.k.wg.Add(1) }) {
		return
	}
	go func() {
		defer ho.k.wg.Done()
		for _, id := range ho.place.waiterIDs() {
			ho.k.kickLoop(id)
		}
	}()
}

// waiterIDs lists the tasks waiting for a slot in creation order.
func (p *placement) waiterIDs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := make([]string, 0, len(p.waiters))
	for id := range p.waiters {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := p.waiters[ids[i]], p.waiters[ids[j]]
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
func (ho *Hosts) recheckPlacement(taskID string) {
	ho.place.mu.Lock()
	w, ok := ho.place.waiters[taskID]
	missed := ok && w.gen != ho.place.gen
	ho.place.mu.Unlock()
	if missed {
		ho.k.kickLoop(taskID)
		return
	}
	if c, found := ho.k.cached(taskID); ok && found && c.Waiting != w.reason {
		ho.k.setUnserved(taskID, w.cause, w.reason)
	}
}

// releasedOnHost is called when a run leaves the live runs: if its task is
// on a host, a slot there is free.
func (ho *Hosts) releasedOnHost(taskID string) {
	if t, ok := ho.k.cached(taskID); ok && t.Host != "" {
		ho.hostSlotFreed()
	}
}

// hostSetup is what the task's worktree gets on its host as it does here:
// .worktreeinclude's files, .kandev/setup (docs/hosts.md).
func (ho *Hosts) hostSetup(ctx context.Context, w core.Workspace) *hosts.Setup {
	wt := workspace.Worktree{Repo: w.Repo, Dir: w.Dir, Branch: w.Branch}
	return &hosts.Setup{Included: ho.ws.Included(ctx, w.Dir), Script: workspace.SetupScript(wt), Base: w.Base,
		Timeout: ho.ws.SetupTimeout}
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
