package engine

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/capability"
	"github.com/kandev/kandev/store"
)

var _ api.ToolHost = (*Tools)(nil)

// Authenticate derives the calling agent from its session token. Tokens
// are stored hashed and die with their session.
func (tl *Tools) Authenticate(ctx context.Context, token string) (core.Actor, error) {
	if token == "" {
		return core.Actor{Kind: core.ActorExternal}, nil
	}
	hash := hashToken(token)
	actor, live := tl.k.live.caller(hash)
	if live {
		return actor, nil
	}
	tok, err := tl.k.db.GetToken(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return core.Actor{}, core.Errorf(core.CodeForbidden, "unknown session token")
	}
	if err != nil {
		return core.Actor{}, mapStoreErr(err, "token")
	}
	if !tok.RevokedAt.IsZero() {
		return core.Actor{}, core.Errorf(core.CodeForbidden, "session token revoked: session %s has ended", tok.SessionID)
	}
	return core.Actor{Kind: core.ActorAgent, TaskID: tok.TaskID, SessionID: tok.SessionID}, nil
}

// setFor returns the caller's capability set: a live session's set as it
// was derived at launch, or the external surface.
func (tl *Tools) setFor(actor core.Actor) (capability.Set, error) {
	switch actor.Kind {
	case core.ActorExternal:
		return capability.Resolve(capability.Case{Surface: capability.External}), nil
	case core.ActorAgent:
		run := tl.k.live.session(actor.SessionID)
		if run != nil {
			return run.set, nil
		}
		t, ok := tl.k.cached(actor.TaskID)
		if !ok {
			return capability.Set{}, core.Errorf(core.CodeNotFound, "task %s not found", actor.TaskID)
		}
		return tl.runs.capabilitySet(t), nil
	}
	return capability.Set{}, tl.auth.may(actor, ActUseTools, core.Task{}) // a person's: refused
}

// ToolSurface implements api.ToolHost.
func (tl *Tools) ToolSurface(ctx context.Context) (api.ToolSurface, error) {
	actor := core.ActorFrom(ctx)
	set, err := tl.setFor(actor)
	if err != nil {
		return api.ToolSurface{}, err
	}
	ts := api.ToolSurface{Surface: string(set.Surface), Groups: []string{}, Question: set.Question, Tools: set.Names(),
		TaskID: actor.TaskID, SessionID: actor.SessionID}
	for _, g := range set.Groups {
		ts.Groups = append(ts.Groups, string(g))
	}
	if t, ok := tl.k.cached(actor.TaskID); ok {
		ts.Autopilot = t.Autopilot
	}
	return ts, nil
}

// CallTool implements api.ToolHost: the tool must be in the caller's set,
// its arguments must pass capability.Check (the bridge's own words: an
// agent may call this route directly), then its handler (toolTable) runs
// as the caller.
func (tl *Tools) CallTool(ctx context.Context, name string, raw []byte) (any, error) {
	actor := core.ActorFrom(ctx)
	set, err := tl.setFor(actor)
	if err != nil {
		return nil, err
	}
	if !set.Has(name) {
		if _, known := capability.Lookup(name); !known {
			return nil, core.Errorf(core.CodeNotFound, "unknown tool %s", name)
		}
		return nil, tl.auth.mayCall(actor, set, name)
	}
	tool, _ := capability.Lookup(name)
	args, err := capability.Check(tool, raw)
	if err != nil {
		return nil, core.Errorf(core.CodeValidation, "%s", err)
	}
	h, ok := toolTable[name]
	if !ok {
		return nil, core.Errorf(core.CodeInternal, "tool %s has no handler", name)
	}
	tl.awaitStream(ctx, actor)
	return h.run(tl, ctx, actor, args)
}

// toolStreamWait bounds how long a tool call waits for its agent's
// stream: a recorder stuck on the store must not hold the call for long.
const toolStreamWait = 2 * time.Second

// awaitStream lets what the calling agent streamed before the call be
// recorded first. The call comes over the MCP bridge, apart from the
// agent's ACP stream, and overtook it: "question › Which env?" was logged
// before the words that led to it (the guard holds a text chunk for up to
// joinWait to join the next ones). The agent wrote those words before it
// called, so by now they are read and counted; only their handling is
// waited for.
func (tl *Tools) awaitStream(ctx context.Context, actor core.Actor) {
	if actor.Kind != core.ActorAgent || actor.SessionID == "" {
		return
	}
	run := tl.k.live.session(actor.SessionID)
	if run == nil || run.proc == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, toolStreamWait)
	defer cancel()
	run.proc.AwaitEarlier(ctx)
}

func orSelf(id string, actor core.Actor) string {
	if id == "" {
		return actor.TaskID
	}
	return id
}

// taskPage is list_tasks_kandev's result: one page of the listing.
type taskPage struct {
	Tasks []core.Task `json:"tasks"`
	// NextCursor, when set, continues the listing after this page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// toolListTasks reads one page: only the page's tasks are looked at and
// copied (plus those the filters skip), so the first page of 100,000
// tasks costs what the page does.
func (tl *Tools) toolListTasks(ctx context.Context, actor core.Actor, a *capability.ListTasksArgs) (any, error) {
	root := a.RootID
	if root == "" && actor.Kind == core.ActorAgent {
		root = actor.TaskID
	}
	limit := a.Limit // 1 to ListTasksMaxLimit when given (capability.Check)
	if limit == 0 {
		limit = capability.ListTasksDefaultLimit
	}
	parent := ""
	if a.ParentID != "" {
		id, err := tl.k.resolveID(ctx, a.ParentID)
		if err != nil {
			return nil, err
		}
		parent = id
	}
	match := func(t *core.Task) bool {
		return (a.Status == "" || string(t.Status) == a.Status) &&
			(parent == "" || t.ParentID == parent) &&
			(a.Assignee == "" || assigneeIs(t.Assignee, a.Assignee))
	}
	tasks, next, err := tl.tasks.taskPage(ctx, api.ListTasksInput{All: a.IncludeArchived, Root: root}, a.Cursor, limit, match)
	if err != nil {
		return nil, err
	}
	return taskPage{Tasks: tasks, NextCursor: next}, nil
}

// assigneeIs matches "role:NAME", "person:NAME" or a bare NAME.
func assigneeIs(a *core.Ref, want string) bool {
	if a == nil {
		return false
	}
	if strings.Contains(want, ":") {
		return a.String() == want
	}
	return a.Name == want
}

func (tl *Tools) toolCreateTask(ctx context.Context, actor core.Actor, a *capability.CreateTaskArgs) (any, error) {
	in := api.CreateTaskInput{Title: a.Title, Description: a.Description, Prompt: a.Prompt, ParentID: a.ParentID,
		Profile: a.Profile, Autopilot: a.Autopilot, Sandbox: a.Sandbox, Start: true, CWD: a.CWD, Workspace: a.Workspace, Base: a.Base}
	if in.Workspace == "" && actor.Kind == core.ActorAgent {
		// An agent's subtask works beside it unless it asks for its own
		// worktree (a parent without one shares its directory either way).
		in.Workspace = core.WorkspaceInherit
	}
	if a.Start != nil {
		in.Start = *a.Start
	}
	if in.Prompt == "" {
		in.Prompt = a.Description
	}
	if actor.Kind == core.ActorAgent {
		if in.ParentID == "" {
			in.ParentID = actor.TaskID
		}
		pid, err := tl.k.resolveID(ctx, in.ParentID)
		if err != nil {
			if core.CodeOf(err) == core.CodeNotFound {
				return nil, core.Errorf(core.CodeValidation, "parent task %s does not exist", in.ParentID)
			}
			return nil, err
		}
		if err := tl.auth.may(actor, ActCreateChild, core.Task{ID: pid}); err != nil {
			return nil, err
		}
		in.ParentID = pid
	}
	return tl.tasks.CreateTask(ctx, in)
}

func (tl *Tools) toolSetTitle(ctx context.Context, actor core.Actor, title string) (any, error) {
	title = strings.TrimSpace(title)
	if title == "" {
		return nil, core.Errorf(core.CodeValidation, "title cannot be empty")
	}
	if err := checkTitle(title); err != nil {
		return nil, err
	}
	if len([]rune(title)) > maxTitle {
		return nil, core.Errorf(core.CodeValidation, "title is too long; keep it to %d characters at most", maxTitle)
	}
	if err := tl.k.db.SetTaskTitle(ctx, actor.TaskID, title, time.Now().UTC()); err != nil {
		return nil, mapStoreErr(err, "task "+actor.TaskID)
	}
	return tl.k.refresh(ctx, actor.TaskID)
}

// Tools is the MCP tool surface (tools.go, tooltable.go): it
// authenticates an agent's session, lists the tools its task's profile
// gives it and serves a call by the tool table, each row calling the area
// that does the work.
type Tools struct {
	k *kernel

	auth       *authorizer
	chain      *Chain
	messages   *Messages
	questions  *Questions
	roles      *Roles
	runs       *Runs
	tasks      *Tasks
	workspaces *Workspaces
}
