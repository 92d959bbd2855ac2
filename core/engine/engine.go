// Package engine is kandev's service layer and orchestrator: it owns the
// store, the live agent runs and the event bus, enforces the coordination
// rules, and serves api.Client's operations, area by area, for every
// front end (through the daemon).
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/capability"
	"github.com/kandev/kandev/core/config"
	"github.com/kandev/kandev/store"
)

// Options configure an Engine.
type Options struct {
	Home core.Home
	DB   *store.DB
	// SelfExe is the kandev executable: it runs the mock agent and is the
	// MCP bridge command injected into every session.
	SelfExe string
	// Socket is the daemon socket the MCP bridge dials.
	Socket string
	Logger *slog.Logger
	// Version is reported by Version.
	Version string
	// Grace paces process teardown.
	Grace agent.Grace
	// StartTimeout bounds an agent's initialize and session setup.
	StartTimeout time.Duration
	// QueueCap is the most messages one sender may have waiting on a task,
	// and the most from senders other than its operator and direct parent
	// together (default core.QueueCap).
	QueueCap int
	// QuestionTurnGrace is how long an agent may keep its turn after
	// ask_parent_question_kandev returned before the engine ends it
	// (default DefaultQuestionTurnGrace).
	QuestionTurnGrace time.Duration
	// ProgressInterval paces keep-alives of waiting question calls.
	ProgressInterval time.Duration
	// IdleTimeout ends an agent's run after this long without a turn (its
	// session is resumed on the next input). Zero keeps idle agents up.
	IdleTimeout time.Duration
	// AfterTurnEnd, when set, runs once a turn's end (or a failed start) is
	// recorded and before its stall check: a failpoint for tests of the
	// startup sweep.
	AfterTurnEnd func(taskID string)
	// DuringRecovery, when set, runs inside the startup recovery of the
	// n-th (from 0) interrupted session, after its prompt is queued again
	// and before that is committed: a failpoint for kill -9 in recovery.
	DuringRecovery func(n int)
	// BeforeTeardown, when set, runs once a run's end is recorded and
	// before its processes are torn down: a failpoint for a crash in that
	// window.
	BeforeTeardown func(sessionID string)
	// NoResume leaves runs a daemon exit cut short for an explicit start
	// or message (they show as interrupted); by default the startup
	// recovery delivers their queues again by itself (ADR 0026).
	NoResume bool
	// BeforeStart, when set, runs after a create with Start committed and
	// before the start: a failpoint for a crash in between.
	BeforeStart func(taskID string)
	// Config reads the configuration (environment, then config.toml) when
	// an agent asks a permission, so a changed policy applies at once, and
	// when a top-level task is created without a profile, for the default
	// one (ADR 0038); nil uses the built-in defaults (and core.DefaultProfile).
	Config func() (config.Config, error)
	// Launcher starts each agent run. Default: ProcessLauncher, a child
	// process per run (core/agent). Tests serve the mock agent in process
	// over pipes instead, so the engine's races run without processes.
	Launcher Launcher
	// SSHConfig, when set, is the ssh_config every ssh to a host uses
	// (`ssh -F`) instead of the user's own: tests (KANDEV_SSH_CONFIG).
	SSHConfig string
	// Clock is the time spend limits count their windows by (ADR 0077):
	// default the wall clock; tests inject one (FileClock).
	Clock Clock
}

// Launcher starts one agent run: the process (or, in tests, the in-process
// agent) behind a session, speaking ACP to h. It returns once the agent
// exists; the engine then opens its session (Run.Open) under its own fence.
type Launcher interface {
	Launch(spec agent.Spec, h agent.Handler) (*agent.Run, error)
}

// LauncherFunc adapts a function to Launcher.
type LauncherFunc func(spec agent.Spec, h agent.Handler) (*agent.Run, error)

// Launch implements Launcher.
func (f LauncherFunc) Launch(spec agent.Spec, h agent.Handler) (*agent.Run, error) { return f(spec, h) }

// ProcessLauncher runs every agent as a child process in its own group.
var ProcessLauncher Launcher = LauncherFunc(agent.Start)

// DefaultQuestionTurnGrace is generous on purpose: the tool result tells
// the agent to end its turn, and a cancel costs some agents (Gemini CLI)
// the session's memory of the turn, so it is only a backstop for an agent
// that never stops.
const DefaultQuestionTurnGrace = 2 * time.Minute

// Engine is the composition root: it builds the areas over one kernel
// (compose.go), starts and stops them, and the daemon's operation table
// routes each of api.Client's operations to the area that serves it
// (eng.Tasks.CreateTask, eng.Hosts.Add). State lives in parts that own it
// with their lock (cache, live, waiters, deferred, spend: each file says
// what its lock guards); a task's rt.mu is taken before any of theirs
// (docs/architecture.md, "The engine's parts").
type Engine struct {
	// k is the shared kernel (kernel.go): the store, the task cache, the
	// live runs, the bus, commit and announce. Every area holds it too.
	k *kernel

	// flusher writes the recorders' streamed output (ADR 0050).
	flusher streamFlusher

	started time.Time      // reported by Version (the daemon's uptime)
	procWG  sync.WaitGroup // process teardowns and timers
	cancel  context.CancelFunc

	// Hosts is the hosts area (hosts.go): the daemon routes the host
	// operations to it, and the other areas call it for placement, faults
	// and a run's host.
	Hosts *Hosts
	// Spend is the spend area (usage.go, budget.go): the daemon routes
	// usage and budgets to it, and the other areas call it for a task's
	// budget and a report's spend.
	Spend *Spend
	// Workspaces is the workspaces area (workspace.go): the daemon routes
	// the worktree operations to it, and the other areas call it for a
	// task's worktree at create, launch, turn end and archive.
	Workspaces *Workspaces
	// Roles is the roles and profiles area (roles.go, profiles.go): the
	// daemon routes roles, people and profiles to it, and the other areas
	// call it for an assignee, a task's role and its profile.
	Roles *Roles
	// Questions is the questions and permissions area (questions.go,
	// permission.go): the daemon routes answers to it, and the other areas
	// call it to supersede or stale a question and for the agents' asks.
	Questions *Questions
	// Messages is the messages and queues area (messages.go, queue.go):
	// the daemon routes start, message, the conversation and the queue to
	// it, and the other areas call it for a start and what a task takes.
	Messages *Messages
	Runs     *Runs
	Turns    *Turns
	Tasks    *Tasks
	Chain    *Chain
	Tools    *Tools
	auth     *authorizer
}

// New opens an engine over an open store and loads the task cache.
func New(ctx context.Context, opts Options) (*Engine, error) {
	if err := opts.fillDefaults(); err != nil {
		return nil, err
	}
	base, cancel := context.WithCancel(context.Background())
	k := &kernel{
		opts: opts, db: opts.DB, log: opts.Logger, bus: newBus(),
		cache:   newTaskCache(),
		live:    newLiveRuns(),
		waiters: newWaitingCalls(), deferred: newDeferredDeliveries(),
		baseCtx: base,
	}
	e := &Engine{k: k, cancel: cancel, started: time.Now()}
	e.compose()
	roles, err := k.db.ListRoles(ctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("engine: load roles: %w", err)
	}
	explicit := map[string]bool{}
	for _, r := range roles {
		explicit[r.Name] = !r.Implicit
	}
	if err := k.cache.load(ctx, k.db, explicit); err != nil {
		cancel()
		return nil, err
	}
	if err := e.Spend.loadLimits(ctx); err != nil {
		cancel()
		return nil, fmt.Errorf("engine: load limits: %w", err)
	}
	return e, nil
}

// fillDefaults checks the options and fills in what was left unset.
func (opts *Options) fillDefaults() error {
	if opts.DB == nil {
		return errors.New("engine: no store")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Clock == nil {
		opts.Clock = wallClock{}
	}
	if opts.QueueCap <= 0 {
		opts.QueueCap = api.QueueCap
	}
	if opts.Grace == (agent.Grace{}) {
		opts.Grace = agent.DefaultGrace
	}
	if opts.QuestionTurnGrace <= 0 {
		opts.QuestionTurnGrace = DefaultQuestionTurnGrace
	}
	if opts.Launcher == nil {
		opts.Launcher = ProcessLauncher
	}
	if opts.ProgressInterval <= 0 {
		opts.ProgressInterval = 10 * time.Second
	}
	if opts.Home.Dir != "" {
		// One spelling of the home (ADR 0042): worktree paths made from it
		// and compared with the store's must not depend on how it was named.
		dir, err := core.RealPath(opts.Home.Dir)
		if err != nil {
			return fmt.Errorf("engine: kandev home %s: %w", opts.Home.Dir, err)
		}
		opts.Home.Dir = dir
	}
	if opts.SelfExe == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("engine: find own executable: %w", err)
		}
		opts.SelfExe = exe
	}
	return nil
}

// Bus exposes the event bus (the daemon serves it as SSE).
func (e *Engine) Bus() *Bus { return e.k.bus }

// Close stops taking work, tears down every agent process group, marks
// their sessions interrupted and waits for turn goroutines to end.
func (e *Engine) Close() error {
	runs, first := e.k.live.close()
	if !first {
		return nil
	}
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Add(1)
		go func(r *liveRun) {
			defer wg.Done()
			e.Runs.interruptRun(r, "shut down")
		}(r)
	}
	wg.Wait()
	e.cancel()
	e.k.wg.Wait()
	e.procWG.Wait()
	// What the agents streamed before they were torn down and still
	// waits is written before the store closes (ADR 0050).
	for _, r := range runs {
		if r.rec != nil {
			r.rec.flush()
		}
	}
	e.Hosts.close()
	e.Spend.closeLimits()
	return nil
}

// --- task cache -----------------------------------------------------------

// stripe picks one of n locks for a task id (FNV-1a).
func stripe(id string, n int) int {
	h := uint32(2166136261)
	for i := 0; i < len(id); i++ {
		h ^= uint32(id[i])
		h *= 16777619
	}
	return int(h % uint32(n))
}

// resolveID accepts an exact id or a unique prefix of one.
func (k *kernel) resolveID(ctx context.Context, ref string) (string, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return "", core.Errorf(core.CodeValidation, "task id is required")
	}
	if _, ok := k.cached(ref); ok {
		return ref, nil
	}
	if len(ref) >= 2 && len(ref) < core.IDLength {
		ids, err := k.db.TaskIDsWithPrefix(ctx, ref, 6)
		if err != nil {
			return "", mapStoreErr(err, "task "+ref)
		}
		switch len(ids) {
		case 1:
			return ids[0], nil
		case 0:
		default:
			return "", core.Errorf(core.CodeValidation, "task id %q is ambiguous: it could be %s", ref, strings.Join(ids, ", "))
		}
	}
	return "", core.Errorf(core.CodeNotFound, "task %s not found", ref)
}

func (k *kernel) task(ctx context.Context, ref string) (core.Task, error) {
	id, err := k.resolveID(ctx, ref)
	if err != nil {
		return core.Task{}, err
	}
	t, ok := k.cached(id)
	if !ok {
		return core.Task{}, core.Errorf(core.CodeNotFound, "task %s not found", ref)
	}
	return t, nil
}

// --- conversions ------------------------------------------------------------

// taskFromView builds the client view of a task. explicitRole says whether
// its assignee is a named role (office work) rather than a bare profile.
func taskFromView(v store.TaskView, explicitRole bool) core.Task {
	var t core.Task
	setTaskFromView(&t, &v, explicitRole)
	return t
}

// setTaskFromView is taskFromView into t: at the start, 100,000 times,
// copying each view and task by value showed in the profile.
func setTaskFromView(t *core.Task, v *store.TaskView, explicitRole bool) {
	*t = core.Task{
		ID: v.ID, Title: v.Title, Description: v.Description, ParentID: v.ParentID,
		Status: core.Status(v.Status), Autopilot: v.Autopilot, Sandbox: v.Sandbox, Profile: v.Profile, CWD: v.CWD,
		CreatedBy: core.ParseBy(v.CreatedBy), CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt,
		Archived: v.Archived(), ArchivedAt: v.ArchivedAt, Halted: v.Halted, Queued: v.Queued,
		TitlePending: v.TitlePending, Assignee: core.ParseRefPtr(v.Assignee), HandedBy: core.ParseRefPtr(v.HandedBy),
		Waiting: v.Waiting, WaitCause: core.ParseStoredWait(v.WaitingCause, v.Waiting), BlockedBy: v.OpenBlockers, Surface: v.Surface, Workspace: workspaceOf(v.Task),
		Host: v.Host,
	}
	t.Usage, t.Budget = usageFromStore(v.Usage)
	if t.BlockedBy == nil {
		t.BlockedBy = []string{}
	}
	if t.Surface == "" {
		t.Surface = string(capability.KanbanTask)
		if explicitRole {
			t.Surface = string(capability.OfficeTask)
		}
	}
	if v.Stalled != "" {
		if st, err := core.ParseStoredStall(v.Stalled); err == nil {
			t.Stalled = &st
		}
	}
	if v.Session != nil {
		s := sessionInfo(*v.Session)
		t.Session = &s
	}
	if v.Question != nil {
		if q, err := questionInfo(*v.Question); err == nil {
			t.PendingQuestion = &q
		}
	}
	active := !t.Archived && !t.Status.Terminal()
	// Finished work is nobody's turn: a task whose worktree was discarded
	// has nothing left to do (it takes no input either).
	discarded := t.Workspace != nil && t.Workspace.Mode == core.WorkspaceDiscarded
	// A stuck task (stalled, nobody to escalate to) is the operator's too:
	// nobody else will ever move it.
	t.YourTurn = active && !discarded && ((t.Assignee != nil && t.Assignee.IsOperator()) ||
		(t.PendingQuestion != nil && t.PendingQuestion.Kind.ForPerson()) || t.Stuck())
	// Interrupted until its queue is delivered again: the session a daemon
	// exit ended is the latest, and something is queued for its next turn.
	t.Interrupted = active && !t.Halted && t.Queued > 0 && t.Session != nil &&
		t.Session.State == core.SessionCancelled && v.Session.Interrupted
	t.Stage = core.StageOf(t)
}

func sessionInfo(s store.Session) core.SessionInfo {
	info := core.SessionInfo{ID: s.ID, TaskID: s.TaskID, Role: s.Role, Profile: s.Profile, State: core.SessionState(s.State),
		AgentSessionID: s.AgentSessionID, PID: s.PID, Turns: s.Turns, TurnStartedAt: s.TurnStartedAt,
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
	// The store keeps one text for both; only a failed run's is an error.
	if info.State == core.SessionFailed {
		info.Error = s.Error
	} else {
		info.EndReason = s.Error
	}
	return info
}

func messageFromStore(m store.Message) core.Message {
	cm := core.Message{Seq: m.Seq, TaskID: m.TaskID, SessionID: m.SessionID, Kind: core.MessageKind(m.Kind),
		Author: core.ParseBy(m.Author), Text: m.Text, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt}
	if m.Meta != "" && m.Meta != "{}" {
		cm.Meta = json.RawMessage(m.Meta)
	}
	return cm
}

// mapStoreErr turns store errors into core errors once, here.
func mapStoreErr(err error, what string) error {
	if err == nil {
		return nil
	}
	var ce *core.Error
	if errors.As(err, &ce) {
		return err
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return core.Errorf(core.CodeNotFound, "%s not found", what)
	case errors.Is(err, store.ErrConflict):
		return core.Errorf(core.CodeConflict, "%s already exists", what)
	case errors.Is(err, store.ErrConstraint):
		return core.Errorf(core.CodeConflict, "%s: %v", what, err)
	}
	return &core.Error{Code: core.CodeInternal, Message: fmt.Sprintf("%s: %v", what, err)}
}

// Version serves api.Client's operation of that name.
func (e *Engine) Version(ctx context.Context) (api.VersionInfo, error) {
	runs := e.k.live.count()
	running := 0
	cv := e.k.cache.rlock()
	for _, t := range cv.tasks {
		if !t.Archived && t.Running() {
			running++
		}
	}
	cv.runlock()
	return api.VersionInfo{Version: e.k.opts.Version, SchemaVersion: store.SchemaVersion(), PID: os.Getpid(), Home: e.k.opts.Home.Dir,
		StartedAt: e.started, LiveRuns: runs, Running: running, Resumed: e.Runs.Resumed()}, nil
}

// Events serves api.Client's operation of that name.
func (e *Engine) Events(ctx context.Context, in api.EventsInput) (<-chan core.Event, error) {
	sub, src, cancel := e.k.bus.SubscribeAppends(in.TaskID, AppendsOf(in.Appends))
	out := make(chan core.Event, 64)
	if in.Appends != "" {
		out <- core.Event{Type: core.EventSubscribed, Subscription: sub, At: time.Now().UTC()}
	}
	go func() {
		defer close(out)
		defer cancel()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-src:
				if !ok {
					return
				}
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}
