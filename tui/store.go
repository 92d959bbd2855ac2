package tui

import (
	"strings"

	"github.com/kandev/kandev/core"
)

// taskStore holds the tasks the UI knows, indexed for the tree: by id, by
// parent, and in creation order (a parent always precedes its children).
// Archived tasks are not kept.
type taskStore struct {
	byID  map[string]*entry
	order []string            // creation order; may hold removed ids until compacted
	kids  map[string][]string // parent id -> children, in creation order
	dead  int                 // removed ids still in order

	counts counts
	// gen counts changes, so what is derived from the tasks shown (the
	// tree's width) is computed again only after one.
	gen uint64
}

type entry struct {
	// t points into the listing the store was reset from (no copy of
	// 100,000 tasks), or at a task an event brought.
	t *core.Task
	// partial: t is a summary (no description, session details, ...);
	// an event or a GetTask replaces it with the whole task.
	partial bool
	// Set by flatten: the row index (-1 when not shown), whether the task
	// matches the filter, and whether it or a descendant does.
	row         int
	match, keep bool
}

// counts are the totals the status bar shows, kept up to date on every
// change so nothing scans the whole store to show them.
type counts struct {
	total, running, askYou, askParent, yours int
	// paused: live agents whose turn waits on a person's answer (a
	// permission, a question). Not running, as kandev status counts, but
	// shown beside running so a live agent never reads as "0 running".
	paused int
}

func (c *counts) add(t *core.Task, d int) {
	c.total += d
	// Counted as kandev status counts them (core.Task.Running, NeedsYou).
	if t.Running() {
		c.running += d
	} else if agentLive(t) {
		c.paused += d
	}
	if waitsOnYou(t) {
		c.yours += d
	}
	if q := t.PendingQuestion; q != nil && q.Status == core.QuestionPending {
		if q.Kind == core.QuestionParent {
			c.askParent += d
		} else {
			c.askYou += d
		}
	}
}

// agentLive: the task's agent process is up (starting or in a turn),
// whatever its turn waits on.
func agentLive(t *core.Task) bool {
	return t.Session != nil && (t.Session.State == core.SessionRunning || t.Session.State == core.SessionStarting)
}

func newTaskStore() *taskStore {
	return &taskStore{byID: map[string]*entry{}, kids: map[string][]string{}}
}

// reset replaces everything with a fresh listing (creation order, or the
// tree's order: a parent before its children); partial says the tasks are
// summaries. The store keeps tasks and changes them in place: the caller
// hands them over.
func (s *taskStore) reset(tasks []core.Task, partial bool) {
	*s = taskStore{byID: make(map[string]*entry, len(tasks)), kids: make(map[string][]string, len(tasks)/4+1),
		order: make([]string, 0, len(tasks)), gen: s.gen + 1}
	// One allocation for every entry: at 100,000 tasks, one each was a
	// good part of the first frame, in allocation and in GC. Entries point
	// into tasks, which the store keeps: copying them doubled the TUI's
	// memory at 100,000 tasks.
	slab := make([]entry, len(tasks))
	for i := range tasks {
		if tasks[i].Archived {
			continue
		}
		slab[i] = entry{t: &tasks[i], row: -1, partial: partial}
		s.add(&slab[i])
	}
}

// isPartial reports whether the store holds only id's summary.
func (s *taskStore) isPartial(id string) bool {
	e := s.byID[id]
	return e != nil && e.partial
}

func (s *taskStore) get(id string) *core.Task {
	if e := s.byID[id]; e != nil {
		return e.t
	}
	return nil
}

func (s *taskStore) len() int { return len(s.byID) }

func (s *taskStore) insert(t core.Task) { s.add(&entry{t: &t, row: -1}) }

func (s *taskStore) add(e *entry) {
	id := e.t.ID
	s.gen++
	s.byID[id] = e
	s.order = append(s.order, id)
	s.kids[e.t.ParentID] = append(s.kids[e.t.ParentID], id)
	s.counts.add(e.t, 1)
}

// upsert applies a task as the engine reported it. It reports whether the
// tree's shape changed (a task appeared, left or moved).
func (s *taskStore) upsert(t core.Task) (structural bool) {
	e := s.byID[t.ID]
	if t.Archived {
		if e == nil {
			return false
		}
		s.remove(t.ID)
		return true
	}
	if e == nil {
		s.insert(t)
		return true
	}
	s.gen++
	s.counts.add(e.t, -1)
	e.partial = false
	moved := e.t.ParentID != t.ParentID
	if moved {
		s.kids[e.t.ParentID] = without(s.kids[e.t.ParentID], t.ID)
		s.kids[t.ParentID] = append(s.kids[t.ParentID], t.ID)
	}
	e.t = &t
	s.counts.add(e.t, 1)
	return moved
}

func (s *taskStore) remove(id string) {
	e := s.byID[id]
	if e == nil {
		return
	}
	s.gen++
	s.counts.add(e.t, -1)
	delete(s.byID, id)
	s.kids[e.t.ParentID] = without(s.kids[e.t.ParentID], id)
	s.dead++
	if s.dead > 64 && s.dead > len(s.order)/2 {
		live := s.order[:0]
		for _, id := range s.order {
			if s.byID[id] != nil {
				live = append(live, id)
			}
		}
		s.order, s.dead = live, 0
	}
}

// update changes one task in place through fn, keeping the counts right.
func (s *taskStore) update(id string, fn func(t *core.Task)) bool {
	e := s.byID[id]
	if e == nil {
		return false
	}
	s.gen++
	s.counts.add(e.t, -1)
	fn(e.t)
	s.counts.add(e.t, 1)
	return true
}

func without(ids []string, id string) []string {
	for i, x := range ids {
		if x == id {
			return append(ids[:i:i], ids[i+1:]...)
		}
	}
	return ids
}

// isRoot: no parent, or a parent the UI does not show (archived).
func (s *taskStore) isRoot(t *core.Task) bool {
	return t.ParentID == "" || s.byID[t.ParentID] == nil
}

// isRunning: an agent turn is under way or about to be.
func isRunning(t *core.Task) bool {
	if t.Session == nil {
		return false
	}
	switch t.Session.State {
	case core.SessionRunning, core.SessionStarting:
		return true
	}
	return false
}

// asksYou: the task waits on the operator's answer.
func asksYou(t *core.Task) bool {
	q := t.PendingQuestion
	return q != nil && q.Status == core.QuestionPending && q.Kind != core.QuestionParent
}

// waitsOnYou: the operator must act: answer its question, or take it
// (it is assigned to them, for instance after an escalation).
// An interrupted task (a daemon started with --no-resume) waits for your
// start too.
// Finished work (done, cancelled, discarded) does not (core.Task.NeedsYou).
func waitsOnYou(t *core.Task) bool { return t.NeedsYou().Urgency != core.UrgencyNone }

// stateFilter narrows the tree by what the tasks are doing.
type stateFilter int

const (
	stateAll stateFilter = iota
	stateNeedsYou
	stateRunning
	stateActive
	stateProblem
	stateDone
	numStateFilters
)

func (f stateFilter) String() string {
	return [...]string{"all", "waiting on you", "running", "active", "failed/stopped/escalated", "done"}[f]
}

func (f stateFilter) match(t *core.Task) bool {
	switch f {
	case stateNeedsYou:
		return waitsOnYou(t)
	case stateRunning:
		return t.Running() // as counted (a turn waiting on you is not)
	case stateActive:
		return t.Status.Active()
	case stateProblem:
		return t.Halted || t.Escalated() || t.Stuck() || (t.Session != nil && t.Session.State == core.SessionFailed)
	case stateDone:
		return t.Status.Terminal()
	}
	return true
}

// filter is what the operator narrowed the tree to: text (in the title,
// id or profile) and a state.
type filter struct {
	text  string // lower case
	state stateFilter
}

func (f filter) active() bool { return f.text != "" || f.state != stateAll }

func (f filter) match(t *core.Task) bool {
	if !f.state.match(t) {
		return false
	}
	if f.text == "" {
		return true
	}
	return containsFold(t.Title, f.text) || strings.Contains(t.ID, f.text) || containsFold(t.Profile, f.text)
}

// containsFold reports whether s contains the lower-case needle, without
// allocating for ASCII text.
func containsFold(s, lowerNeedle string) bool {
	n := len(lowerNeedle)
	if n == 0 {
		return true
	}
	for i := 0; i+n <= len(s); i++ {
		j := 0
		for ; j < n; j++ {
			c := s[i+j]
			if c >= 0x80 {
				return strings.Contains(strings.ToLower(s), lowerNeedle)
			}
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != lowerNeedle[j] {
				break
			}
		}
		if j == n {
			return true
		}
	}
	return false
}
