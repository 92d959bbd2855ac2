package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/store"
)

// maxTitle keeps titles to what a tree row can show.
const maxTitle = 200

// CreateTask serves api.Client's operation of that name. Autopilot is decided here and never
// again: it is not inherited from the parent, and the profile must be able to
// take the injected MCP server.
func (ts *Tasks) CreateTask(ctx context.Context, in api.CreateTaskInput) (core.Task, error) {
	actor := core.ActorFrom(ctx)
	key := in.IdempotencyKey
	if len(key) > maxIdempotencyKey {
		return core.Task{}, core.Errorf(core.CodeValidation, "idempotency key is %d bytes; keep it to %d at most", len(key), maxIdempotencyKey)
	}
	if key != "" {
		if t, ok, err := ts.createdBefore(ctx, actor, key, in.Start); ok || err != nil {
			return t, err
		}
	}
	p, err := ts.planCreate(ctx, actor, in)
	if err != nil {
		return core.Task{}, err
	}
	id, err := ts.commitCreate(ctx, p)
	if errors.Is(err, errKeyUsed) {
		if t, ok, err := ts.createdBefore(ctx, actor, key, in.Start); ok || err != nil {
			return t, err
		}
		err = mapStoreErr(err, "task")
	}
	if err != nil {
		return core.Task{}, err
	}
	t, err := ts.GetTask(ctx, id)
	if err != nil {
		return core.Task{}, err
	}
	if in.Start {
		if ts.k.opts.BeforeStart != nil {
			ts.k.opts.BeforeStart(t.ID)
		}
		return ts.messages.StartTask(ctx, t.ID, api.StartTaskInput{})
	}
	return t, nil
}

// startMeta marks a queue item a start put there; see StartedQueues.
const startMeta = `{"start":true}`

// maxIdempotencyKey bounds a create's idempotency key.
const maxIdempotencyKey = 200

var errKeyUsed = errors.New("idempotency key already used")

// createdBefore finds the task an earlier create with the actor's key
// made. A retried create with --start starts the task if the first one
// never got to (its reply, or the daemon, was cut before the start).
func (ts *Tasks) createdBefore(ctx context.Context, actor core.Actor, key string, start bool) (core.Task, bool, error) {
	id, err := ts.k.db.TaskByCreateKey(ctx, actor.String(), key)
	if errors.Is(err, store.ErrNotFound) {
		return core.Task{}, false, nil
	}
	if err != nil {
		return core.Task{}, false, mapStoreErr(err, "task")
	}
	t, err := ts.k.task(ctx, id)
	if err != nil {
		return core.Task{}, true, err
	}
	if start && t.Session == nil && !t.Halted && ts.turns.held(t) == "" {
		if st, err := ts.messages.StartTask(ctx, t.ID, api.StartTaskInput{}); err == nil {
			return st, true, nil
		}
	}
	return t, true, nil
}

// ListTasks serves api.Client's operation of that name: tasks in creation order, so a parent
// always precedes its children.
func (ts *Tasks) ListTasks(ctx context.Context, in api.ListTasksInput) ([]core.Task, error) {
	ptrs, err := ts.TaskSnapshot(ctx, in)
	if err != nil {
		return nil, err
	}
	out := make([]core.Task, len(ptrs))
	for i, p := range ptrs {
		out[i] = *p
	}
	return out, nil
}

// TaskSnapshot is ListTasks without the copies: the cache never changes a
// task in place (a change stores a new value), so the pointers stay valid
// and unchanging after the lock is released. For large listings.
func (ts *Tasks) TaskSnapshot(ctx context.Context, in api.ListTasksInput) ([]*core.Task, error) {
	var root string
	if in.Root != "" {
		id, err := ts.k.resolveID(ctx, in.Root)
		if err != nil {
			return nil, err
		}
		root = id
	}
	cv := ts.k.cache.rlock()
	defer cv.runlock()
	if root != "" {
		var out []*core.Task
		var walk func(id string)
		walk = func(id string) {
			t := cv.tasks[id]
			if t == nil || (t.Archived && !in.All) {
				return
			}
			out = append(out, t)
			for _, c := range cv.children[id] {
				walk(c)
			}
		}
		walk(root)
		return out, nil
	}
	out := make([]*core.Task, 0, len(cv.order))
	for _, id := range cv.order {
		t := cv.tasks[id]
		if t.Archived && !in.All {
			continue
		}
		out = append(out, t)
	}
	return out, nil
}

// TreeSnapshot is TaskSnapshot in the order a tree shows the tasks: each
// top-level task (no parent, or a parent the listing leaves out) in
// creation order, followed depth first by its subtree, children in
// creation order. A reader can then lay out the first rows of the tree
// from the first lines of the listing, before the rest has arrived (the
// TUI's first frame at 100,000 tasks). A listing under a root is in this
// order already.
func (ts *Tasks) TreeSnapshot(ctx context.Context, in api.ListTasksInput) ([]*core.Task, error) {
	if in.Root != "" {
		return ts.TaskSnapshot(ctx, in)
	}
	cv := ts.k.cache.rlock()
	defer cv.runlock()
	out := make([]*core.Task, 0, len(cv.order))
	shown := func(t *core.Task) bool { return t != nil && (in.All || !t.Archived) }
	var walk func(t *core.Task)
	walk = func(t *core.Task) {
		out = append(out, t)
		for _, c := range cv.children[t.ID] {
			if ct := cv.tasks[c]; shown(ct) {
				walk(ct)
			}
		}
	}
	for _, id := range cv.order {
		t := cv.tasks[id]
		if !shown(t) || (t.ParentID != "" && shown(cv.tasks[t.ParentID])) {
			continue
		}
		walk(t)
	}
	return out, nil
}

// taskPage is one page of a listing: up to limit tasks that match, after
// the task cursor (from the start when ""), and the cursor of the next
// page ("" when none). Without a root it walks the creation order from
// the cursor and stops once the page is full, so a page's cost does not
// grow with the number of tasks.
func (ts *Tasks) taskPage(ctx context.Context, in api.ListTasksInput, cursor string, limit int, match func(*core.Task) bool) ([]core.Task, string, error) {
	page := []core.Task{}
	next := ""
	// take adds t to the page, or notes that a next page exists; it
	// reports when to stop.
	take := func(t *core.Task) bool {
		if !match(t) {
			return false
		}
		if len(page) == limit {
			next = page[len(page)-1].ID
			return true
		}
		page = append(page, *t)
		return false
	}
	stale := func() error {
		return core.Errorf(core.CodeValidation, "cursor %q is not in this listing any more (its task was archived?); list again without a cursor", cursor)
	}
	if in.Root != "" {
		snap, err := ts.TaskSnapshot(ctx, in)
		if err != nil {
			return nil, "", err
		}
		start := 0
		if cursor != "" {
			start = slices.IndexFunc(snap, func(t *core.Task) bool { return t.ID == cursor }) + 1
			if start == 0 {
				return nil, "", stale()
			}
		}
		for _, t := range snap[start:] {
			if take(t) {
				break
			}
		}
		return page, next, nil
	}
	cv := ts.k.cache.rlock()
	defer cv.runlock()
	start := 0
	if cursor != "" {
		t := cv.tasks[cursor]
		if t == nil || (t.Archived && !in.All) {
			return nil, "", stale()
		}
		start = slices.Index(cv.order, cursor) + 1
	}
	for _, id := range cv.order[start:] {
		t := cv.tasks[id]
		if t == nil || (t.Archived && !in.All) {
			continue
		}
		if take(t) {
			break
		}
	}
	return page, next, nil
}

// GetTask serves api.Client's operation of that name.
func (ts *Tasks) GetTask(ctx context.Context, id string) (core.Task, error) {
	t, err := ts.k.task(ctx, id)
	if err == nil {
		// A subtree shares its root's budget: the one that binds is shown.
		t.Budget = ts.spend.governingBudget(t)
		t.ChildQuestions = ts.k.childQuestions(&t)
		t.MCPServers = ts.mcpServersOf(ctx, t)
	}
	return t, err
}

// mcpServersOf names the MCP servers t's agent is given when it starts:
// kandev's, then the profile's of its last run, else of the role that
// holds it; none when no agent ran or would run it, or that profile is
// gone.
func (ts *Tasks) mcpServersOf(ctx context.Context, t core.Task) []string {
	name := ""
	switch {
	case t.Session != nil && t.Session.Profile != "":
		name = t.Session.Profile
	case t.Assignee != nil && t.Assignee.IsRole():
		role, err := ts.roles.roleOf(ctx, t.Assignee.Name)
		if err != nil {
			return nil
		}
		name = role.Profile
	default:
		return nil
	}
	prof, err := ts.roles.profile(ctx, name)
	if err == nil {
		prof, err = ts.k.withConfigServers(prof)
	}
	if err != nil {
		return nil
	}
	return serverNames(prof)
}

// childQuestions lists the pending questions t's subtasks asked it, in the
// order a person holding t answers them (core.ChildQuestionsOf, ADR 0069),
// from the cache: a question and its task's refresh commit together.
func (k *kernel) childQuestions(t *core.Task) []core.ChildQuestion {
	cv := k.cache.rlock()
	kids := make([]*core.Task, 0, len(cv.children[t.ID]))
	for _, id := range cv.children[t.ID] {
		if c := cv.tasks[id]; c != nil && c.PendingQuestion != nil {
			cc := *c
			kids = append(kids, &cc)
		}
	}
	cv.runlock()
	return core.ChildQuestionsOf(t, kids)
}

// EditTask serves api.Client's operation of that name. Naming autopilot at all is refused.
func (ts *Tasks) EditTask(ctx context.Context, ref string, in api.EditTaskInput) (core.Task, error) {
	if in.Autopilot != nil {
		return core.Task{}, core.Errorf(core.CodeValidation, "autopilot is fixed at creation and cannot be changed; create a new task to change it")
	}
	t, err := ts.auth.authorized(ctx, core.ActorFrom(ctx), ref, ActEdit)
	if err != nil {
		return core.Task{}, err
	}
	if t.Archived {
		return core.Task{}, core.Errorf(core.CodeConflict, "task %s is archived", t.ID)
	}
	if in.Title == nil && in.Description == nil {
		return core.Task{}, core.Errorf(core.CodeValidation, "nothing to change: give --title or --description")
	}
	title, desc := t.Title, t.Description
	if in.Title != nil {
		title = strings.TrimSpace(*in.Title)
		if title == "" {
			return core.Task{}, core.Errorf(core.CodeValidation, "title cannot be empty")
		}
		if err := checkTitle(title); err != nil {
			return core.Task{}, err
		}
		if utf8.RuneCountInString(title) > maxTitle {
			return core.Task{}, core.Errorf(core.CodeValidation, "title is %d characters; keep it to %d at most", utf8.RuneCountInString(title), maxTitle)
		}
	}
	if in.Description != nil {
		desc = strings.TrimSpace(*in.Description)
	}
	now := time.Now().UTC()
	err = ts.k.commit(ctx, func(tx *store.Tx, c *changes) error {
		c.touch(t.ID)
		if in.Title != nil {
			if err := tx.SetTaskTitle(ctx, t.ID, title, now); err != nil {
				return err
			}
		}
		return tx.UpdateTaskText(ctx, t.ID, title, desc, now)
	})
	if err != nil {
		return core.Task{}, mapStoreErr(err, "task "+t.ID)
	}
	return ts.k.task(ctx, t.ID)
}

// ArchiveTask serves api.Client's operation of that name. Archiving is idempotent; it halts a
// running agent and makes a pending question stale.
func (ts *Tasks) ArchiveTask(ctx context.Context, ref string, _ api.ArchiveTaskInput) (core.Task, error) {
	t, err := ts.auth.authorized(ctx, core.ActorFrom(ctx), ref, ActArchive)
	if err != nil {
		return core.Task{}, err
	}
	if t.Archived {
		return t, nil
	}
	ts.chain.halt(t.ID, "archived")
	// An archived task takes no turn, so it cannot stay in progress: it
	// goes to review, as a stop leaves it (ADR 0016). Its subtasks are
	// not touched.
	c, err := ts.k.tx(ctx, func(tx *store.Tx, c *changes) error {
		now := time.Now().UTC()
		if err := tx.ArchiveTask(ctx, t.ID, now); err != nil {
			return err
		}
		if err := ts.questions.staleQuestionTx(ctx, tx, t.ID, "the task was archived", c); err != nil {
			return err
		}
		if cur, ok := ts.k.cached(t.ID); ok && cur.Status == core.StatusInProgress {
			if err := tx.SetTaskStatus(ctx, t.ID, string(core.StatusReview), now); err != nil {
				return err
			}
			actor := core.ActorFrom(ctx)
			note, err := tx.InsertMessage(ctx, store.Message{TaskID: t.ID, Kind: string(core.MsgStatus), Author: actor.String(),
				Text: "archived by " + actor.String() + ": in_progress → review", Meta: "{}", CreatedAt: now, UpdatedAt: now})
			if err != nil {
				return err
			}
			c.addMessage(note)
		}
		return nil
	})
	if err != nil {
		return core.Task{}, mapStoreErr(err, "task "+t.ID)
	}
	ts.k.announce(c)
	ts.workspaces.retireWorktree(ctx, t)
	return ts.k.refresh(ctx, t.ID)
}

// SetTaskStatus serves api.Client's operation of that name: a move the transition table
// allows. Done and cancelled halt the task's agent and make its question
// stale.
func (ts *Tasks) SetTaskStatus(ctx context.Context, ref string, status core.Status) (core.Task, error) {
	if _, err := core.ParseStatus(string(status)); err != nil {
		return core.Task{}, err
	}
	t, err := ts.auth.authorized(ctx, core.ActorFrom(ctx), ref, ActSetStatus)
	if err != nil {
		return core.Task{}, err
	}
	if t.Archived {
		return core.Task{}, core.Errorf(core.CodeConflict, "task %s is archived", t.ID)
	}
	if err := ts.chain.mustHold(core.ActorFrom(ctx), t); err != nil {
		return core.Task{}, err
	}
	if status == core.StatusDone {
		if err := ts.auth.may(core.ActorFrom(ctx), ActMarkDone, t); err != nil {
			return core.Task{}, err
		}
	}
	if err := core.CheckTransition(t.Status, status); err != nil {
		return core.Task{}, core.Errorf(core.CodeConflict, "task %s: %s", t.ID, err.Error())
	}
	if t.Status == status {
		return t, nil
	}
	var wakes []store.QueueItem
	if status.Terminal() {
		finishedTask := t
		finishedTask.Status = status
		wakes = ts.chain.wakesFor(ctx, finishedTask)
	}
	// The status and the wakes it causes land together: a waiting task
	// never sees its subtask finished without the wake already queued, so
	// its stall check cannot run in between (rule 4).
	c, err := ts.commitStatus(ctx, t, status, wakes)
	if err != nil {
		return core.Task{}, mapStoreErr(err, "task "+t.ID)
	}
	if status.Terminal() {
		// After the commit, not before: a turn loop that read the task
		// between a halt and the commit would launch under the new fence
		// and run a turn on a finished task. Now a loop that read it before
		// the commit holds a stale fence and launches nothing, and one that
		// reads it after sees it finished.
		ts.chain.halt(t.ID, "marked "+string(status))
	}
	ts.k.announce(c)
	return ts.k.refresh(ctx, t.ID)
}

// commitStatus records t's new status with what it causes, in one
// transaction: its stall settled and its questions stale when finished,
// the wakes of those waiting on it queued, and the status note.
func (ts *Tasks) commitStatus(ctx context.Context, t core.Task, status core.Status, wakes []store.QueueItem) (changes, error) {
	return ts.k.tx(ctx, func(tx *store.Tx, c *changes) error {
		now := time.Now().UTC()
		if err := tx.SetTaskStatus(ctx, t.ID, string(status), now); err != nil {
			return err
		}
		// Finishing a task settles the escalation that brought it here.
		if status.Terminal() && t.Stalled != nil {
			if err := tx.SetStalled(ctx, t.ID, "", now); err != nil {
				return err
			}
		}
		for _, w := range wakes {
			if _, err := tx.Enqueue(ctx, w); err != nil {
				return err
			}
			c.wake(w.TaskID)
		}
		if status.Terminal() {
			if err := ts.questions.staleQuestionTx(ctx, tx, t.ID, "the task was marked "+string(status), c); err != nil {
				return err
			}
		}
		note, err := tx.InsertMessage(ctx, store.Message{TaskID: t.ID, Kind: string(core.MsgStatus), Author: core.ActorFrom(ctx).String(),
			Text: "status: " + string(t.Status) + " → " + string(status), Meta: "{}", CreatedAt: now, UpdatedAt: now})
		if err != nil {
			return err
		}
		c.addMessage(note)
		return nil
	})
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "mock:") {
			return l
		}
	}
	return ""
}

func truncateRunes(s string, n int) string {
	// Walk to the cut instead of converting the whole text to runes: the
	// text may be an agent's whole streamed answer (hundreds of KB, a
	// megabyte of runes) of which the first n are kept.
	count := 0
	for i := range s {
		if count == n-1 {
			if _, size := utf8.DecodeRuneInString(s[i:]); i+size < len(s) {
				return s[:i] + "…" // more than n runes
			}
			return s
		}
		count++
	}
	return s
}

// Tasks is the tasks area (tasks.go, create.go, stats.go, integrity.go,
// appends.go): create, list, read, edit, archive and the status of a
// task. Creating one touches every other area (its profile, budget,
// worktree, host, first message), hence its many fields.
type Tasks struct {
	k *kernel

	auth       *authorizer
	chain      *Chain
	hosts      *Hosts
	messages   *Messages
	questions  *Questions
	roles      *Roles
	runs       *Runs
	spend      *Spend
	turns      *Turns
	workspaces *Workspaces
}
