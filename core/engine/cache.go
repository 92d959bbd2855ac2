package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/store"
)

// taskCache is the engine's in-memory copy of every task's view: every
// list, snapshot and tree walk reads it, none reads the store (100,000
// tasks, ADR 0031). The store is the authority; the cache is what the
// last refresh of each task read from it.
//
// mu guards tasks, order, children and unchecked. Readers hold it shared
// through read; only put (a refresh's write) and load (before the engine
// is shared) write. Invariants under mu:
//   - tasks holds one view per task id, never nil; a changed task's
//     pointer is replaced, never written through, so a *core.Task read
//     under mu may be kept (and copied) after it is released, and views
//     may share a backing array (load's slabs);
//   - order lists every id in tasks once, in creation order (CreatedAt,
//     then id), and a task is appended when first put;
//   - children[p] lists p's children in that same order;
//   - unchecked lists, in creation order, the tasks loaded with a stall
//     check a crash interrupted; the start's sweep takes it once.
//
// refreshMu serialises each task's read from the store and its write into
// the cache (striped by id): two refreshes racing, one read before a
// commit and one after, could otherwise leave the older view in the cache
// until the next change. A stripe is taken before mu, never while mu is
// held, and never two stripes at once.
type taskCache struct {
	mu        sync.RWMutex
	tasks     map[string]*core.Task
	order     []string
	children  map[string][]string
	unchecked []string

	refreshMu [64]sync.Mutex
	// afterStoreRead lets a test hold a refresh between its read and its
	// cache write.
	afterStoreRead func(id string)
}

func newTaskCache() taskCache {
	return taskCache{tasks: map[string]*core.Task{}, children: map[string][]string{}}
}

// cacheView is the cache as a reader sees it, under the read lock: rlock
// takes the lock and returns the view, runlock releases it. The view is
// read-only (nothing is written through it) and must not be used, nor its
// slices kept, after runlock. While it is held, nothing that takes the
// cache's write lock or a refresh may be called.
//
// A view with its unlock rather than a function run under the lock: the
// readers (lists, tree walks, budget lookups) return from inside their
// loops, and they sit on the hot paths of 100,000-task lists (ADR 0054).
type cacheView struct {
	tasks    map[string]*core.Task
	order    []string
	children map[string][]string
	c        *taskCache
}

// rlock takes the cache's read lock and returns the view it guards.
func (c *taskCache) rlock() cacheView {
	c.mu.RLock()
	return cacheView{tasks: c.tasks, order: c.order, children: c.children, c: c}
}

// runlock releases the read lock rlock took.
func (v cacheView) runlock() { v.c.mu.RUnlock() }

// get returns a copy of a cached task.
func (c *taskCache) get(id string) (core.Task, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.tasks[id]
	if !ok {
		return core.Task{}, false
	}
	return *t, true
}

// refresh reads a task with fetch, under the task's refresh stripe, and
// puts what it read into the cache. It returns the task read, whether the
// cache held it already and the view it replaced (nil when new).
func (c *taskCache) refresh(id string, fetch func() (core.Task, error)) (t core.Task, prev *core.Task, err error) {
	mu := &c.refreshMu[stripe(id, len(c.refreshMu))]
	mu.Lock()
	defer mu.Unlock()
	t, err = fetch()
	if err != nil {
		return core.Task{}, nil, err
	}
	if c.afterStoreRead != nil {
		c.afterStoreRead(id)
	}
	c.mu.Lock()
	prev, existed := c.tasks[id]
	c.tasks[id] = &t
	if !existed {
		c.order = append(c.order, id)
		if t.ParentID != "" {
			c.children[t.ParentID] = append(c.children[t.ParentID], id)
		}
	}
	c.mu.Unlock()
	return t, prev, nil
}

// takeUnchecked returns the tasks load found with an interrupted stall
// check, once.
func (c *taskCache) takeUnchecked() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := c.unchecked
	c.unchecked = nil
	return ids
}

// load fills the cache from the store, before the engine is shared.
// explicit names the roles made explicitly (the views' assignee flag).
func (c *taskCache) load(ctx context.Context, db *store.DB, explicit map[string]bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := db.CountTasks(ctx)
	if err != nil {
		return fmt.Errorf("engine: count tasks: %w", err)
	}
	// Tasks go straight into the cache as the store reads them, with no
	// list of views in between (40 MB at 100,000 tasks), and the maps are
	// built while the store's scans run on. They live in a few large
	// allocations: the cache replaces a changed task's pointer rather
	// than writing through it, so sharing a backing array is safe.
	const chunk = 4096
	var slab []core.Task
	loaded := make([]*core.Task, 0, n)
	c.tasks = make(map[string]*core.Task, n)
	// Sized up front: a forest of small trees has many parents, and the
	// map's growth showed in New's profile at 100,000 tasks.
	c.children = make(map[string][]string, n)
	c.order = make([]string, 0, n)
	var unchecked []*core.Task
	err = db.EachTaskView(ctx, func(v *store.TaskView) {
		if len(slab) == cap(slab) {
			slab = make([]core.Task, 0, chunk)
		}
		a, _ := core.ParseRef(v.Assignee)
		slab = slab[:len(slab)+1]
		t := &slab[len(slab)-1]
		setTaskFromView(t, v, a.IsRole() && explicit[a.Name])
		loaded = append(loaded, t)
		c.tasks[t.ID] = t
		c.order = append(c.order, t.ID)
		if t.ParentID != "" {
			c.children[t.ParentID] = append(c.children[t.ParentID], t.ID)
		}
		if v.NeedsCheck {
			unchecked = append(unchecked, t)
		}
	})
	if err != nil {
		return fmt.Errorf("engine: load tasks: %w", err)
	}
	if err := c.loadPullRequestsLocked(ctx, db); err != nil {
		return err
	}
	if err := c.loadSourcesLocked(ctx, db); err != nil {
		return err
	}
	c.orderByCreationLocked(loaded, unchecked)
	return nil
}

// loadPullRequestsLocked sets the pull request URLs, which are few, on
// their tasks' views in one read. c.mu is held.
func (c *taskCache) loadPullRequestsLocked(ctx context.Context, db *store.DB) error {
	links, err := db.TaskLinks(ctx, linkPullRequest)
	if err != nil {
		return fmt.Errorf("engine: load task links: %w", err)
	}
	for id, u := range links {
		if t := c.tasks[id]; t != nil && t.Workspace != nil {
			w := *t.Workspace
			w.PullRequest = u
			t.Workspace = &w
		}
	}
	return nil
}

// loadSourcesLocked sets the tracker sources, which few tasks have, on
// their tasks' views in one read. c.mu is held.
func (c *taskCache) loadSourcesLocked(ctx context.Context, db *store.DB) error {
	sources, err := db.TaskSources(ctx)
	if err != nil {
		return fmt.Errorf("engine: load task sources: %w", err)
	}
	for id, s := range sources {
		if t := c.tasks[id]; t != nil {
			t.Source = &core.TaskSource{Kind: s.Kind, Ref: s.Ref, URL: s.URL}
		}
	}
	return nil
}

// orderByCreationLocked keeps the order, the children and the unchecked
// tasks in creation order. c.mu is held.
func (c *taskCache) orderByCreationLocked(loaded, unchecked []*core.Task) {
	// Tables are mostly in creation order already: the order and the
	// children are made again only when not.
	for i := 1; i < len(loaded); i++ {
		if byCreation(loaded[i-1], loaded[i]) > 0 {
			slices.SortFunc(loaded, byCreation)
			c.order = c.order[:0]
			clear(c.children)
			for _, t := range loaded {
				c.order = append(c.order, t.ID)
				if t.ParentID != "" {
					c.children[t.ParentID] = append(c.children[t.ParentID], t.ID)
				}
			}
			break
		}
	}
	slices.SortFunc(unchecked, byCreation)
	for _, t := range unchecked {
		c.unchecked = append(c.unchecked, t.ID)
	}
}

// byCreation orders tasks as they were created (ties by id).
func byCreation(a, b *core.Task) int {
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}
