package engine

// The kernel (issue 35): what every area of the engine shares, and the
// only thing an area that is its own type is given besides the named
// dependencies it declares. Its fields are its contract.

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/config"
	"github.com/kandev/kandev/store"
)

// kernel is the state and the helpers every area of the engine shares:
// the store, the task cache and the live runs, the bus, the one commit
// step (tx, commit, announce: commit.go), the engine's notes and events
// (events.go), the waiting reason a task shows (setUnserved), and the
// wake of a task's turn loop. It owns no lock of its own: each part it
// holds keeps its own (cache.go, live.go, waiting.go, deferred.go; the
// lock order is docs/architecture.md's, "The engine's parts").
//
// Every area holds the kernel as a named field (Hosts.k), never the
// Engine; the kernel's own helpers read only its state (resolve a task,
// its ancestry, who hands it on).
// now is the engine's clock's time (Options.Clock), in UTC.
func (k *kernel) now() time.Time {
	if k.opts.Clock == nil {
		return time.Now().UTC()
	}
	return k.opts.Clock.Now().UTC()
}

type kernel struct {
	// opts: the engine's options, their defaults filled in (New).
	opts Options
	// db: the store, the authority every view is read from.
	db  *store.DB
	log *slog.Logger
	// bus: where every refresh, message, session and question is
	// published (the daemon serves it as SSE).
	bus *Bus

	// cache: every task's view (cache.go).
	cache taskCache

	// live: the tasks' runtimes, the live runs and their tokens, and the
	// closing flag (live.go).
	live liveRuns

	// waiters: the tool calls blocked on a person's answer (waiting.go):
	// announce tells them how their question ended.
	waiters waitingCalls
	// deferred: why a delivery that could not be written waits, by task
	// (deferred.go): storedTask shows it as the task's waiting reason.
	deferred deferredDeliveries

	wg      sync.WaitGroup // turn loops, and the goroutines that kick them
	baseCtx context.Context
	// kickLoop starts a task's turn loop unless one is running, never
	// blocking: the turns area's kick (turns.go), set by compose. It is
	// announce's last step and how a run waiting for a host slot is woken.
	kickLoop func(id string)
	// limitWait says why a reached spend limit holds a task's queued work,
	// or "": the spend area's (limits.go), set by compose; storedTask
	// shows it as the task's waiting reason.
	limitWait func(t core.Task) string
}

func (k *kernel) isClosing() bool {
	return k.live.isClosing()
}

// refresh reloads a task's view from the store into the cache and publishes
// it. Every mutation ends with a refresh of what it touched.
func (k *kernel) refresh(ctx context.Context, id string) (core.Task, error) {
	t, prev, err := k.cache.refresh(id, func() (core.Task, error) { return k.storedTask(ctx, id) })
	if err != nil {
		return core.Task{}, err
	}
	existed := prev != nil
	needsYou := startsNeedingYou(prev, &t)
	typ := core.EventTaskUpdated
	if !existed {
		typ = core.EventTaskCreated
	}
	tc := t
	k.bus.Publish(core.Event{Type: typ, TaskID: id, Task: &tc})
	if needsYou {
		tn := t
		k.bus.Publish(core.Event{Type: core.EventNeedsYou, TaskID: id, Task: &tn})
	}
	return t, nil
}

// startsNeedingYou reports whether a task's change from before (nil: it
// is new) to after should tell a person: it needs one now and did not, it
// became more urgent, or it asks a new question. A task created already
// needing you is told only when urgent (a person made it theirs).
func startsNeedingYou(before, after *core.Task) bool {
	a := after.NeedsYou()
	if a.Urgency == core.UrgencyNone {
		return false
	}
	if before == nil {
		return a.Urgency.Urgent()
	}
	if b := before.NeedsYou(); a.Urgency > b.Urgency {
		return true
	}
	q, bq := after.PendingQuestion, before.PendingQuestion
	return q != nil && q.Status == core.QuestionPending && q.Kind.ForPerson() &&
		(bq == nil || bq.ID != q.ID || bq.Status != core.QuestionPending)
}

// storedTask reads a task's view from the store: the authority, where the
// cache may lag a commit by a moment.
func (k *kernel) storedTask(ctx context.Context, id string) (core.Task, error) {
	ctx = context.WithoutCancel(ctx)
	v, err := k.db.TaskView(ctx, id)
	if err != nil {
		return core.Task{}, mapStoreErr(err, "task "+id)
	}
	explicitRole := false
	if a := core.ParseRefPtr(v.Assignee); a != nil && a.IsRole() {
		if r, err := k.db.GetRole(ctx, a.Name); err == nil {
			explicitRole = !r.Implicit
		}
	}
	t := taskFromView(v, explicitRole)
	if w := t.Workspace; w != nil && w.Mode != core.WorkspaceShared {
		u, err := k.db.TaskLink(ctx, id, linkPullRequest)
		if err != nil {
			return core.Task{}, mapStoreErr(err, "task "+id)
		}
		w.PullRequest = u
	}
	if t.Source, err = k.sourceOf(ctx, id, v.HasSource); err != nil {
		return core.Task{}, mapStoreErr(err, "task "+id)
	}
	if t.Waiting == "" {
		if t.Waiting = k.deferred.reason(id); t.Waiting != "" {
			t.WaitCause = core.WaitDelivery
		}
	}
	if t.Waiting == "" && k.limitWait != nil {
		if t.Waiting = k.limitWait(t); t.Waiting != "" {
			t.WaitCause = core.WaitLimit
		}
	}
	return t, nil
}

func (k *kernel) refreshQuiet(id string) {
	if _, err := k.refresh(context.Background(), id); err != nil {
		k.log.Error("refresh task", "task", id, "err", err)
	}
}

// cached returns a copy of a cached task.
func (k *kernel) cached(id string) (core.Task, bool) {
	return k.cache.get(id)
}

// notifyWaiter hands d to a blocked ask_user call; false when none waits.
func (k *kernel) notifyWaiter(questionID string, d answerDelivery) bool {
	return k.waiters.notify(questionID, d)
}

// setUnserved shows on the task why its agent cannot start. It is not a
// failed run and never escalates; the task starts by itself once the
// profile can run (profile edited, daemon restarted with the CLI present).
func (k *kernel) setUnserved(taskID string, cause core.WaitCause, reason string) {
	ctx := context.Background()
	if t, ok := k.cached(taskID); ok && t.Waiting == reason && t.WaitCause == cause {
		return
	}
	// The reason and its note are one transaction: the task never shows
	// a waiting reason its conversation does not explain.
	err := k.commit(ctx, func(tx *store.Tx, c *changes) error {
		c.touch(taskID)
		if err := tx.SetWaiting(ctx, taskID, string(cause), reason, time.Now().UTC()); err != nil {
			return err
		}
		return c.noteTx(ctx, tx, taskID, core.MsgStatus, "kandev", "waiting: "+reason, map[string]any{"unserved": reason})
	})
	if err != nil {
		k.log.Error("record waiting reason", "task", taskID, "err", err)
	}
	k.log.Warn("task cannot start", "task", taskID, "reason", reason)
}

func (k *kernel) clearUnserved(taskID string) {
	if t, ok := k.cached(taskID); ok && t.WaitCause != core.WaitNone {
		ctx := context.Background()
		err := k.commit(ctx, func(tx *store.Tx, c *changes) error {
			c.touch(taskID)
			return tx.SetWaiting(ctx, taskID, "", "", time.Now().UTC())
		})
		if err != nil {
			k.log.Error("clear waiting reason", "task", taskID, "err", err)
		}
	}
}

// configValue reads a key from the environment, else config.toml, else its
// built-in default; a broken file gives the default.
func (k *kernel) configValue(key string) string {
	var cfg config.Config
	if k.opts.Config != nil {
		c, err := k.opts.Config()
		if err == nil {
			cfg = c
		}
	}
	v, err := cfg.Get(key)
	if err != nil {
		def, _ := config.Lookup(key)
		return def.Default
	}
	return v.Value
}

// isAncestor reports whether anc is a proper ancestor of id.
func (k *kernel) isAncestor(anc, id string) bool {
	cv := k.cache.rlock()
	defer cv.runlock()
	for cur := cv.tasks[id]; cur != nil && cur.ParentID != ""; cur = cv.tasks[cur.ParentID] {
		if cur.ParentID == anc {
			return true
		}
	}
	return false
}

// handerOf is the assignee reference of whoever acts: a person as
// themselves, an agent as the role its session serves.
func (k *kernel) handerOf(actor core.Actor) string {
	switch actor.Kind {
	case core.ActorPerson:
		return personRef(actor.Name)
	case core.ActorAgent:
		run := k.live.session(actor.SessionID)
		if run != nil {
			return roleRef(run.role)
		}
		if s, err := k.db.GetSession(context.Background(), actor.SessionID); err == nil {
			return roleRef(s.Role)
		}
	}
	return ""
}
