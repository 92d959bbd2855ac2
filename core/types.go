package core

import (
	"encoding/json"
	"strings"
	"time"
)

// Task is a task as every client sees it (CLI --json, HTTP, MCP, TUI).
//
// Its fields are declared here only: their wire shape (taskJSON, Task's
// MarshalJSON and UnmarshalJSON, in types_json.go) and the daemon's fast
// encoder (core/daemon/encode_task.go) are generated from them by
// `go generate ./core/daemon`, whose test fails while they are stale. A
// wire tag says how a field's zero differs on the wire: wire:"null" is
// null (a root's parent, a live task's archived_at), wire:"empty" writes a
// nil slice as []. The fields are in the wire's order: keep it.
type Task struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description"`
	ParentID    string `json:"parent_id" wire:"null"`
	Status      Status `json:"status"`
	// Stage is how the status is shown (StageOf, ADR 0070), written by
	// the daemon for scripts; Go code asks StageOf, which needs only the
	// fields a summary carries.
	Stage     Stage `json:"stage"`
	Autopilot bool  `json:"autopilot"`
	// Sandbox is where its agent runs (none, bwrap, docker, podman):
	// fixed at creation, never less confined than the parent's.
	Sandbox    string    `json:"sandbox"`
	Profile    string    `json:"profile"`
	CWD        string    `json:"cwd"`
	CreatedBy  By        `json:"created_by"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	Archived   bool      `json:"archived"`
	ArchivedAt time.Time `json:"archived_at" wire:"null"`

	// Halted: a stop left the task; queued messages wait for an explicit start.
	Halted bool `json:"halted"`
	// TitlePending: the title is a placeholder the task's agent should set.
	TitlePending bool `json:"title_pending"`
	// Queued counts messages waiting for the task's next turns.
	Queued int `json:"queued"`
	// Session is the task's latest agent run, if it ever ran.
	Session *SessionInfo `json:"session"`
	// PendingQuestion is the question the task waits on, if any.
	PendingQuestion *QuestionInfo `json:"pending_question"`
	// ChildQuestions are the pending questions its subtasks asked it, in
	// the order a person holding it answers them (ChildQuestionsOf): set
	// by task show (GetTask), nil in lists and events, where a front end
	// orders its subtasks' own PendingQuestion the same way.
	ChildQuestions []ChildQuestion `json:"child_questions,omitempty"`
	// MCPServers are the MCP servers its agent is given at each start:
	// kandev's own, then its profile's (its last run's profile, else its
	// role's; ADR 0078); empty when no agent ran or would run it. Set by
	// GetTask (task show) only.
	MCPServers []string `json:"mcp_servers,omitempty"`

	// Assignee moves the task forward: a role (its agent runs) or a person.
	Assignee *Ref `json:"assignee"`
	// HandedBy is who handed the task to its assignee ("back" goes there).
	HandedBy *Ref `json:"handed_by"`
	// Surface is the MCP surface its sessions get.
	Surface string `json:"surface"`
	// Stalled is set while the task is escalated after a stall.
	Stalled *Stall `json:"stalled"`
	// Waiting says why the assignee's agent cannot start (no stall).
	Waiting string `json:"waiting"`
	// WaitCause is why, as code decides on it (Waiting is for people).
	WaitCause WaitCause `json:"wait_cause,omitempty"`
	// YourTurn: the operator must act (assigned to them, or their question).
	YourTurn bool `json:"your_turn"`
	// Interrupted: a daemon exit cut its run short and its queue waits to
	// be delivered again (a daemon started with --no-resume leaves it for
	// an explicit start or message; ADR 0026).
	Interrupted bool `json:"interrupted"`
	// BlockedBy lists unfinished tasks this one waits on.
	BlockedBy []string `json:"blocked_by" wire:"empty"`
	// Workspace is where the task's agent works; nil in summaries.
	Workspace *Workspace `json:"workspace,omitempty"`
	// Usage is what its agents and its subtree's reported spending; nil
	// when nothing was ever reported.
	Usage *TaskUsage `json:"usage,omitempty"`
	// Budget is the budget that governs the task (its own or an
	// ancestor's), nil when none does.
	Budget *BudgetInfo `json:"budget,omitempty"`
	// Host is the host its agent runs on, fixed at creation ("" = this
	// machine; docs/hosts.md).
	Host string `json:"host,omitempty"`
	// Source is the tracker issue the task was created from (task create
	// --from, kandev issues import); nil for any other. Fixed at creation.
	Source *TaskSource `json:"source,omitempty"`
}

// TaskSource is the tracker issue a task was created from: its kind
// (github, gitlab, linear), its canonical reference (gh:owner/repo#12,
// gl:group/project#7, linear:ENG-123) and its web page (docs/trackers.md).
type TaskSource struct {
	Kind string `json:"kind"`
	Ref  string `json:"ref"`
	URL  string `json:"url"`
}

// Workspace modes.
const (
	WorkspaceWorktree  = "worktree"  // the task owns a git worktree on its own branch
	WorkspaceInherit   = "inherit"   // the task works in its parent's worktree
	WorkspaceShared    = "shared"    // the task runs in its directory as it is
	WorkspaceDiscarded = "discarded" // its worktree and branch were removed
	WorkspaceRetired   = "retired"   // archived when done: its worktree was removed, its branch kept unless merged
)

// Workspace is a task's git workspace. Repo, Dir, Branch and Base are
// empty for a shared workspace outside a worktree.
type Workspace struct {
	Mode   string `json:"mode"`
	Repo   string `json:"repo"`   // the main checkout
	Dir    string `json:"dir"`    // the worktree
	Branch string `json:"branch"` // the task's branch
	Base   string `json:"base"`   // the commit the branch started from
	// PullRequest is the URL of the pull request opened for the branch
	// (kandev task pr).
	PullRequest string `json:"pull_request,omitempty"`
}

// StallStuck is the Stall reason of a task that stalled with nobody to
// escalate to (no manager, hander or person creator, no open creating
// task): it stays with its role and waits for the operator.
const StallStuck = "Stuck"

// Stuck reports whether the task stalled with nobody to escalate to.
func (t Task) Stuck() bool { return t.Stalled != nil && t.Stalled.Reason == StallStuck }

// SessionInterruptedPrefix starts the end reason of a session a daemon
// exit (a shutdown or a crash) cut short. Code tests the session's
// interrupted flag; the prefix is for people (ADR 0058).
const SessionInterruptedPrefix = "interrupted: the kandev daemon "

// StallReturned is the Stall reason of a task whose role ended a turn
// without handing it on, and which went back to the person who handed it
// over or created it (ADR 0025): the ordinary end of a request, your turn
// again, not an alarm. Its Detail is the agent's last words.
const StallReturned = "Returned"

// BackToYou reports whether the task came back to the person who handed it
// over or created it because its role ended a turn without handing it on.
func (t Task) BackToYou() bool { return t.Stalled != nil && t.Stalled.Reason == StallReturned }

// Escalated reports whether the task stalled and climbed past its role: to
// a manager, to a person other than its hander or creator, or back to
// them after a failed run or a child's question left unanswered.
func (t Task) Escalated() bool {
	return t.Stalled != nil && t.Stalled.Reason != StallStuck && t.Stalled.Reason != StallReturned
}

// Stall records why and from whom a task was escalated.
type Stall struct {
	Reason string    `json:"reason"`
	From   By        `json:"from"`
	Detail string    `json:"detail"`
	At     time.Time `json:"at"`
	// Failed: the role's run failed (rather than its turn ending without
	// handing the task on). A failed run stays an alarm wherever it goes,
	// never "back to you". Detail still reads "run failed: ..." for people.
	Failed bool `json:"failed,omitempty"`
	// QuestionID is the subtask's question the stall names: a turn that
	// ended leaving it unanswered (CauseUnansweredQuestion). The person
	// the task climbs to answers it first (ChildQuestionsOf, ADR 0069).
	QuestionID string `json:"question_id,omitempty"`
	// Cause is why the role stalled. The stored form carries it
	// (StoredJSON, ParseStoredStall); the wire does not, so a client
	// reading a stall from the daemon has none.
	Cause StallCause `json:"-"`
}

// StallFailedPrefix starts the Detail of a stall whose run failed. Code
// tests Failed; the prefix is for people, and for reading stalls stored
// before Failed existed.
const StallFailedPrefix = "run failed: "

// UnmarshalJSON reads a stall; one stored before Failed existed is failed
// when its Detail carries the prefix. Its cause is read when the JSON has
// one (the stored form); the wire has none (ParseStoredStall reads a row).
func (s *Stall) UnmarshalJSON(b []byte) error {
	type plain Stall
	var p struct {
		plain
		Failed *bool       `json:"failed"`
		Cause  *StallCause `json:"cause"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*s = Stall(p.plain)
	if p.Failed != nil {
		s.Failed = *p.Failed
	} else {
		s.Failed = strings.HasPrefix(s.Detail, StallFailedPrefix)
	}
	if p.Cause != nil {
		s.Cause = *p.Cause
	}
	return nil
}

// Profile names an agent: how to run it over ACP and whether it accepts the
// injected kandev MCP server.
type Profile struct {
	Name    string   `json:"name"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
	Env     []string `json:"env"`
	// MCP: the agent accepts an MCP server injected through session/new.
	// Autopilot needs it, since an autopilot agent coordinates through tools.
	MCP bool `json:"mcp"`
	// Permission answers the agent's permission requests on a normal
	// task: "allow", "deny" or "ask"; empty follows $KANDEV_PERMISSION,
	// else config.toml, else "ask" (ADR 0024).
	Permission string `json:"permission,omitempty"`
	// AutopilotPermission answers them on an autopilot task, where nobody
	// is asked: "allow" or "deny"; empty follows
	// $KANDEV_AUTOPILOT_PERMISSION, else config.toml, else "allow".
	AutopilotPermission string `json:"autopilot_permission,omitempty"`
	// StartTimeout bounds the agent's start (initialize and session
	// setup) for this profile, as a Go duration ("3m"); empty uses the
	// daemon-wide default (KANDEV_AGENT_START_TIMEOUT, else 60 s).
	StartTimeout string `json:"start_timeout,omitempty"`
	// Sandbox is the mode of a new task of this profile that names none
	// (empty: the configuration's sandbox or autopilot_sandbox).
	Sandbox string `json:"sandbox,omitempty"`
	// Image is the container image docker and podman run it in.
	Image string `json:"image,omitempty"`
	// Paths are what a confined agent of this profile may reach besides
	// its worktree: its own config and credential files and directories
	// (~ is the operator's home), read-write ("PATH") or read-only
	// ("ro:PATH"). A path that does not exist is skipped.
	Paths []string `json:"paths,omitempty"`
	// NoNetwork cuts a confined agent off the network.
	NoNetwork bool `json:"no_network,omitempty"`
	// Network is a confined agent's network: "" the sandbox's default
	// (bwrap shares the host's; a container gets its engine's default),
	// "none" (as NoNetwork), or "host" (a container on the host's).
	Network string `json:"network,omitempty"`
	// Forwards are ports of the host's loopback that a confined agent
	// reaches at the same ports of its own, whatever its network
	// (docs/sandbox.md, Network; ADR 0074).
	Forwards []int `json:"forwards,omitempty"`
	// Host is where a new top-level task of this profile runs when its
	// create names none: a host's name, "auto" or "local" (empty: the
	// configuration's host). A subtask inherits its parent's instead.
	Host string `json:"host,omitempty"`
	// MCPServers are the agent's own stdio MCP servers, passed in
	// session/new after kandev's and started by the agent, so inside its
	// sandbox (ADR 0078). Only a profile with MCP takes them.
	MCPServers []MCPServer `json:"mcp_servers,omitempty"`
	// Source is "builtin", "user", or "override" (a user profile that
	// replaces a built-in of the same name).
	Source string `json:"source"`
}

// MCPServer is a stdio MCP server of a profile's agent: its name in
// session/new, the command the agent starts, its arguments and its
// environment entries (KEY=VALUE).
type MCPServer struct {
	Name    string   `json:"name"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
	Env     []string `json:"env,omitempty"`
}

// SessionState is where one agent run stands.
type SessionState string

const (
	SessionCreated         SessionState = "created"
	SessionStarting        SessionState = "starting"
	SessionRunning         SessionState = "running"
	SessionWaitingForInput SessionState = "waiting_for_input"
	SessionCompleted       SessionState = "completed"
	SessionFailed          SessionState = "failed"
	SessionCancelled       SessionState = "cancelled"
)

// Live reports whether the run may still have a process.
func (s SessionState) Live() bool {
	switch s {
	case SessionCreated, SessionStarting, SessionRunning, SessionWaitingForInput:
		return true
	}
	return false
}

// SessionInfo summarises one agent run.
type SessionInfo struct {
	ID             string       `json:"id"`
	TaskID         string       `json:"task_id"`
	Role           string       `json:"role"`
	Profile        string       `json:"profile"`
	State          SessionState `json:"state"`
	AgentSessionID string       `json:"agent_session_id"`
	PID            int          `json:"pid"`
	// Error is why the run failed; only a failed run has one.
	Error string `json:"error"`
	// EndReason says how a run that did not fail ended ("the task was
	// handed to person:operator", idle, stopped, interrupted by a daemon
	// exit): not an error.
	EndReason string `json:"end_reason,omitempty"`
	Turns     int    `json:"turns"`
	// TurnStartedAt is when the current (or last) turn began.
	TurnStartedAt time.Time `json:"turn_started_at"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// MessageKind classifies a conversation entry.
type MessageKind string

const (
	MsgPrompt     MessageKind = "prompt"      // input delivered to the agent as a turn
	MsgAgent      MessageKind = "agent"       // the agent's text (chunks merged)
	MsgThought    MessageKind = "thought"     // the agent's reasoning text
	MsgToolCall   MessageKind = "tool_call"   // a tool call; status updated in place
	MsgPlan       MessageKind = "plan"        // the agent's plan entries
	MsgPermission MessageKind = "permission"  // a permission request and kandev's answer
	MsgQuestion   MessageKind = "question"    // a question the task's agent asked
	MsgAnswer     MessageKind = "answer"      // the answer to a question
	MsgStatus     MessageKind = "status"      // engine notes: turn ended, failed, stopped
	MsgHandoff    MessageKind = "handoff"     // the task changed hands
	MsgTurnEnd    MessageKind = "turn_end"    // a turn's end and stop reason
	MsgUserNotice MessageKind = "user_notice" // misc operator-facing notes
)

// Message is one durable, ordered entry of a task's conversation.
type Message struct {
	Seq       int64           `json:"seq"`
	TaskID    string          `json:"task_id"`
	SessionID string          `json:"session_id,omitempty"`
	Kind      MessageKind     `json:"kind"`
	Author    By              `json:"author,omitzero"`
	Text      string          `json:"text"`
	Meta      json.RawMessage `json:"meta,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// QuestionKind says who must answer: the operator or the parent task.
type QuestionKind string

const (
	QuestionUser   QuestionKind = "user"
	QuestionParent QuestionKind = "parent"
	// QuestionPermission is an agent's session/request_permission waiting
	// on the operator (policy ask, ADR 0024): its options are the agent's,
	// and the turn waits for the answer.
	QuestionPermission QuestionKind = "permission"
)

// ForPerson reports whether the operator answers questions of this kind.
func (k QuestionKind) ForPerson() bool { return k == QuestionUser || k == QuestionPermission }

// QuestionStatus is a question's lifecycle state.
type QuestionStatus string

const (
	QuestionPending    QuestionStatus = "pending"
	QuestionAnswered   QuestionStatus = "answered"
	QuestionSuperseded QuestionStatus = "superseded"
	QuestionStale      QuestionStatus = "stale"
)

// QuestionInfo summarises a question for task views.
type QuestionInfo struct {
	ID           string         `json:"id"`
	Kind         QuestionKind   `json:"kind"`
	Status       QuestionStatus `json:"status"`
	Text         string         `json:"text"`
	AskedAt      time.Time      `json:"asked_at"`
	ParentTaskID string         `json:"parent_task_id,omitempty"`
	Questions    []QuestionItem `json:"questions,omitempty"`
	// Tool is what a permission question asks about (kind permission).
	Tool *PermissionTool `json:"tool,omitempty"`
}

// PermissionTool is the tool call an agent asks permission for, as kandev
// shows it: agent-supplied text, cleaned of terminal controls and bounded.
type PermissionTool struct {
	CallID string `json:"tool_call_id,omitempty"`
	Title  string `json:"title"`
	Kind   string `json:"kind,omitempty"`
	// Input is the call's raw input as compact JSON, cut at
	// PermissionInputMax bytes ("…" marks a cut).
	Input string `json:"input,omitempty"`
}

// PermissionInputMax bounds a permission question's input text.
const PermissionInputMax = 2000

// QuestionItem is one prompt of a question, with optional choices.
type QuestionItem struct {
	Prompt  string           `json:"prompt"`
	Options []QuestionOption `json:"options,omitempty"`
}

// QuestionOption is one choice of a question item.
type QuestionOption struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// EventType names what changed.
type EventType string

const (
	EventTaskCreated    EventType = "task.created"
	EventTaskUpdated    EventType = "task.updated"
	EventSessionUpdated EventType = "session.updated"
	EventMessageAdded   EventType = "message.added"
	EventMessageUpdated EventType = "message.updated"
	// EventMessageAppended carries text streamed onto an entry (Append),
	// not the entry: a follower appends it to what it holds (ADR 0050).
	EventMessageAppended EventType = "message.appended"
	EventQuestionUpdated EventType = "question.updated"
	EventProfileChanged  EventType = "profile.changed"
	// EventNeedsYou follows the task.updated of a task that started
	// needing a person, or asks a new question, or became more urgent
	// (Task.NeedsYou): what the daemon notifies and the TUI rings its
	// bell for. Its Task is the task as updated.
	EventNeedsYou EventType = "task.needs_you"
	// EventResync tells a subscriber it missed events and must reload.
	EventResync EventType = "resync"
	// EventSubscribed opens a stream that asked for an appends filter
	// (EventsInput.Appends): its Subscription is the id FollowAppends
	// takes. Not a change: it has no Seq.
	EventSubscribed EventType = "subscribed"
)

// Event is one change, in the order the daemon made it. Seq increases by
// one per event for the daemon's lifetime.
type Event struct {
	Seq      int64          `json:"seq"`
	Type     EventType      `json:"type"`
	TaskID   string         `json:"task_id,omitempty"`
	At       time.Time      `json:"at"`
	Task     *Task          `json:"task,omitempty"`
	Session  *SessionInfo   `json:"session,omitempty"`
	Message  *Message       `json:"message,omitempty"`
	Append   *MessageAppend `json:"append,omitempty"`
	Question *QuestionInfo  `json:"question,omitempty"`
	Profile  *Profile       `json:"profile,omitempty"`
	// Subscription is a subscribed event's subscription id.
	Subscription string `json:"subscription,omitempty"`
}
