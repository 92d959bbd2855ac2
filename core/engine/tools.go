package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/capability"
	"github.com/kandev/kandev/store"
)

var _ core.ToolHost = (*Engine)(nil)

// Authenticate derives the calling agent from its session token. Tokens
// are stored hashed and die with their session.
func (e *Engine) Authenticate(ctx context.Context, token string) (core.Actor, error) {
	if token == "" {
		return core.Actor{Kind: core.ActorExternal}, nil
	}
	hash := hashToken(token)
	actor, live := e.live.caller(hash)
	if live {
		return actor, nil
	}
	tok, err := e.db.GetToken(ctx, hash)
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
func (e *Engine) setFor(actor core.Actor) (capability.Set, error) {
	switch actor.Kind {
	case core.ActorExternal:
		return capability.Resolve(capability.Case{Surface: capability.External}), nil
	case core.ActorAgent:
		run := e.live.session(actor.SessionID)
		if run != nil {
			return run.set, nil
		}
		t, ok := e.cached(actor.TaskID)
		if !ok {
			return capability.Set{}, core.Errorf(core.CodeNotFound, "task %s not found", actor.TaskID)
		}
		return e.capabilitySet(t), nil
	}
	return capability.Set{}, core.Errorf(core.CodeForbidden, "people use the CLI or the TUI, not MCP tools")
}

// ToolSurface implements core.ToolHost.
func (e *Engine) ToolSurface(ctx context.Context) (core.ToolSurface, error) {
	actor := core.ActorFrom(ctx)
	set, err := e.setFor(actor)
	if err != nil {
		return core.ToolSurface{}, err
	}
	ts := core.ToolSurface{Surface: string(set.Surface), Groups: []string{}, Question: set.Question, Tools: set.Names(),
		TaskID: actor.TaskID, SessionID: actor.SessionID}
	for _, g := range set.Groups {
		ts.Groups = append(ts.Groups, string(g))
	}
	if t, ok := e.cached(actor.TaskID); ok {
		ts.Autopilot = t.Autopilot
	}
	return ts, nil
}

// CallTool implements core.ToolHost: the tool must be in the caller's set,
// its arguments must decode strictly, then it runs as the caller.
func (e *Engine) CallTool(ctx context.Context, name string, raw []byte) (any, error) {
	actor := core.ActorFrom(ctx)
	set, err := e.setFor(actor)
	if err != nil {
		return nil, err
	}
	if !set.Has(name) {
		if _, known := capability.Lookup(name); !known {
			return nil, core.Errorf(core.CodeNotFound, "unknown tool %s", name)
		}
		if name == capability.AskParent && actor.Kind == core.ActorAgent {
			if t, ok := e.cached(actor.TaskID); ok && t.Autopilot && t.ParentID == "" {
				return nil, core.Errorf(core.CodeForbidden, "no parent to ask: task %s is an autopilot root; decide with your best judgment and state your assumptions", t.ID)
			}
		}
		return nil, core.Errorf(core.CodeForbidden, "tool %s is not available to this session (surface %s)", name, set.Surface)
	}
	args := capability.ArgsFor(name)
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(args); err != nil {
		return nil, core.Errorf(core.CodeValidation, "invalid arguments for %s: %s", name, strings.TrimPrefix(err.Error(), "json: "))
	}
	if err := requireParams(name, raw); err != nil {
		return nil, err
	}
	switch a := args.(type) {
	case *capability.CreateTaskArgs:
		return e.toolCreateTask(ctx, actor, a)
	case *capability.ListTasksArgs:
		return e.toolListTasks(ctx, actor, a)
	case *capability.TaskIDArgs:
		return e.GetTask(ctx, orSelf(a.TaskID, actor))
	case *capability.DiffArgs:
		return e.toolTaskDiff(ctx, orSelf(a.TaskID, actor), a.StatOnly)
	case *capability.ConversationArgs:
		return e.Conversation(ctx, orSelf(a.TaskID, actor), core.ConversationInput{After: a.After, Limit: a.Limit})
	case *capability.MessageTaskArgs:
		in := core.MessageInput{Text: a.Prompt, Delivery: core.Delivery(a.DeliveryMode), ReplyTo: a.ReplyToQuestionID}
		for _, c := range a.Comments {
			in.Comments = append(in.Comments, core.ReviewCommentInput(c))
		}
		return e.MessageTask(ctx, a.TaskID, in)
	case *capability.OpenRequestArgs:
		host := capability.HostGitHub
		if name == "open_merge_request_kandev" {
			host = capability.HostGitLab
		}
		return e.openRequest(ctx, actor.TaskID, core.PullRequestInput{Draft: a.Draft, Base: a.Base}, host)
	case *capability.StopTaskArgs:
		return e.StopTask(ctx, a.TaskID)
	case *capability.SaveProfileArgs:
		mcp := true
		if a.MCP != nil {
			mcp = *a.MCP
		}
		return e.AddProfile(ctx, core.Profile{Name: a.Name, Command: a.Command, Args: a.Args, Env: a.Env, MCP: mcp, StartTimeout: a.StartTimeout})
	case *capability.NameArgs:
		return e.RemoveProfile(ctx, a.Name)
	case *capability.SetTitleArgs:
		return e.toolSetTitle(ctx, actor, a.Title)
	case *capability.QuestionArgs:
		if name == capability.AskUser {
			return e.askUser(ctx, actor, *a)
		}
		return e.askParent(ctx, actor, *a)
	case *capability.HandoffArgs:
		return e.HandoffTask(ctx, orSelf(a.TaskID, actor), core.HandoffInput{To: a.To, Message: a.Message})
	case *capability.SetStatusArgs:
		return e.SetTaskStatus(ctx, a.TaskID, core.Status(a.Status))
	case *capability.NoArgs:
		switch name {
		case "list_profiles_kandev":
			ps, err := e.ListProfiles(ctx)
			return map[string]any{"profiles": ps}, err
		case "list_roles_kandev":
			rs, err := e.ListRoles(ctx)
			if err != nil {
				return nil, err
			}
			ps, err := e.ListPersons(ctx)
			return map[string]any{"roles": rs, "people": ps}, err
		case "get_pull_request_comments_kandev":
			return e.requestReview(ctx, actor, capability.HostGitHub)
		case "get_merge_request_comments_kandev":
			return e.requestReview(ctx, actor, capability.HostGitLab)
		}
	}
	return nil, core.Errorf(core.CodeInternal, "tool %s has no handler", name)
}

// requireParams enforces the schema's required parameters for callers
// that bypass the bridge's validation.
func requireParams(name string, raw []byte) error {
	tool, _ := capability.Lookup(name)
	var present map[string]json.RawMessage
	if err := json.Unmarshal(raw, &present); err != nil {
		return core.Errorf(core.CodeValidation, "invalid arguments for %s: want a JSON object", name)
	}
	for _, p := range tool.Params {
		if !p.Required {
			continue
		}
		v, ok := present[p.Name]
		if !ok || string(v) == "null" || string(v) == `""` {
			return core.Errorf(core.CodeValidation, "%s: %s is required", name, p.Name)
		}
	}
	return nil
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
func (e *Engine) toolListTasks(ctx context.Context, actor core.Actor, a *capability.ListTasksArgs) (any, error) {
	root := a.RootID
	if root == "" && actor.Kind == core.ActorAgent {
		root = actor.TaskID
	}
	limit := a.Limit
	switch {
	case limit == 0:
		limit = capability.ListTasksDefaultLimit
	case limit < 0 || limit > capability.ListTasksMaxLimit:
		return nil, core.Errorf(core.CodeValidation, "limit must be 1 to %d, not %d", capability.ListTasksMaxLimit, limit)
	}
	if a.Status != "" {
		if _, err := core.ParseStatus(a.Status); err != nil {
			return nil, err
		}
	}
	parent := ""
	if a.ParentID != "" {
		id, err := e.resolveID(ctx, a.ParentID)
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
	tasks, next, err := e.taskPage(ctx, core.ListTasksInput{All: a.IncludeArchived, Root: root}, a.Cursor, limit, match)
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

func (e *Engine) toolCreateTask(ctx context.Context, actor core.Actor, a *capability.CreateTaskArgs) (any, error) {
	in := core.CreateTaskInput{Title: a.Title, Description: a.Description, Prompt: a.Prompt, ParentID: a.ParentID,
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
		pid, err := e.resolveID(ctx, in.ParentID)
		if err != nil {
			if core.CodeOf(err) == core.CodeNotFound {
				return nil, core.Errorf(core.CodeValidation, "parent task %s does not exist", in.ParentID)
			}
			return nil, err
		}
		if !e.inSubtree(actor, pid) {
			return nil, core.Errorf(core.CodeForbidden, "task %s is outside your subtree; create subtasks under your own task or its descendants", pid)
		}
		in.ParentID = pid
	}
	return e.CreateTask(ctx, in)
}

func (e *Engine) toolSetTitle(ctx context.Context, actor core.Actor, title string) (any, error) {
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
	if err := e.db.SetTaskTitle(ctx, actor.TaskID, title, time.Now().UTC()); err != nil {
		return nil, mapStoreErr(err, "task "+actor.TaskID)
	}
	return e.refresh(ctx, actor.TaskID)
}
