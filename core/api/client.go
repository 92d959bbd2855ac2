package api

import (
	"context"
	"time"

	"github.com/kandev/kandev/core"
)

// Client is the one interface every front end uses: the CLI and the TUI call
// it through the daemon's socket, tests call the engine in process. The
// caller's identity rides in the context (WithActor); without one the
// operator acts. It is the areas' interfaces together, named as the
// engine's areas are, so that a caller that needs one area can ask for it
// alone; what belongs to no area (the event stream, the version) is its
// own. The hosts (HostClient) and spend (Spender) areas stay apart from
// it: front ends and fakes without them need not implement them.
type Client interface {
	TaskClient
	MessageClient
	QuestionClient
	WorkspaceClient
	RoleClient

	// Events streams changes until ctx ends. The channel closes when the
	// stream ends; a resync event means events were missed. Asked for an
	// appends filter (EventsInput.Appends), its first event is subscribed,
	// naming the subscription FollowAppends changes.
	Events(ctx context.Context, in EventsInput) (<-chan core.Event, error)
	// FollowAppends changes which task's streamed output (message.appended)
	// a live event subscription receives: taskID's alone, none when it is
	// "". Every other event flows as before. Not found once the stream
	// ended.
	FollowAppends(ctx context.Context, subscription, taskID string) error

	Version(ctx context.Context) (VersionInfo, error)
}

// TaskClient is the tasks area: a task's life, from its creation to its
// archive, and who holds it.
type TaskClient interface {
	CreateTask(ctx context.Context, in CreateTaskInput) (core.Task, error)
	ListTasks(ctx context.Context, in ListTasksInput) ([]core.Task, error)
	GetTask(ctx context.Context, id string) (core.Task, error)
	EditTask(ctx context.Context, id string, in EditTaskInput) (core.Task, error)
	ArchiveTask(ctx context.Context, id string, in ArchiveTaskInput) (core.Task, error)
	SetTaskStatus(ctx context.Context, id string, status core.Status) (core.Task, error)
	// TaskStats counts the tasks a listing would show: by status, sandbox
	// and host, running, waiting on questions, and their spend.
	TaskStats(ctx context.Context, in ListTasksInput) (TaskStats, error)
	StopTask(ctx context.Context, id string, in StopTaskInput) (StopResult, error)
	// HandoffTask gives the task to a role (its agent runs) or a person.
	HandoffTask(ctx context.Context, id string, in HandoffInput) (HandoffResult, error)
	// BlockTask makes a task wait on others (or, with Remove, stop waiting).
	BlockTask(ctx context.Context, id string, in BlockInput) (core.Task, error)
}

// MessageClient is the messages area: what a task's agent is told, and
// what it said.
type MessageClient interface {
	// StartTask starts (or resumes) the task's agent; a prompt, if given,
	// is queued first and delivered as the turn.
	StartTask(ctx context.Context, id string, in StartTaskInput) (core.Task, error)
	MessageTask(ctx context.Context, id string, in MessageInput) (MessageResult, error)
	Conversation(ctx context.Context, id string, in ConversationInput) (ConversationPage, error)
	// TaskQueue lists what waits for the task's next turns, in order.
	TaskQueue(ctx context.Context, id string) (QueueView, error)
	// DropQueued removes one waiting item (by its id) or all of them; the
	// operator's way out of a queue filled by others.
	DropQueued(ctx context.Context, id string, in DropQueueInput) (QueueView, error)
}

// QuestionClient is the questions area: a task's pending question
// answered.
type QuestionClient interface {
	AnswerQuestion(ctx context.Context, id string, in AnswerInput) (AnswerResult, error)
}

// WorkspaceClient is the workspaces area: a task's worktree and branch,
// and what becomes of them.
type WorkspaceClient interface {
	// TaskDiff is what the task changed in its worktree against its base.
	TaskDiff(ctx context.Context, id string, in DiffInput) (TaskDiff, error)
	// MergeTask merges the task's branch into the main checkout's branch.
	MergeTask(ctx context.Context, id string, in MergeInput) (MergeResult, error)
	// TaskReview lists the review comments kept on the task, each open or
	// outdated by the task's diff as it is now.
	TaskReview(ctx context.Context, id string) (ReviewView, error)
	// PushTask pushes the task's branch to a remote, its uncommitted work
	// committed first.
	PushTask(ctx context.Context, id string, in PushInput) (PushResult, error)
	// PullRequestTask pushes the task's branch and opens a pull request
	// for it (gh), its URL recorded on the task.
	PullRequestTask(ctx context.Context, id string, in PullRequestInput) (PullRequestResult, error)
	// DiscardTask removes the task's worktree and branch.
	DiscardTask(ctx context.Context, id string, in DiscardTaskInput) (core.Task, error)
	// PruneWorktrees removes worktrees under the home that no task owns.
	PruneWorktrees(ctx context.Context, in PruneInput) (PruneResult, error)
}

// RoleClient is the roles and profiles area: the roles, the people and
// the agent profiles tasks are assigned to and run with.
type RoleClient interface {
	ListRoles(ctx context.Context) ([]Role, error)
	GetRole(ctx context.Context, name string) (Role, error)
	AddRole(ctx context.Context, in RoleInput) (Role, error)
	EditRole(ctx context.Context, name string, in RoleInput) (Role, error)
	RemoveRole(ctx context.Context, name string, in RemoveRoleInput) (Role, error)
	ListPersons(ctx context.Context) ([]Person, error)
	AddPerson(ctx context.Context, in AddPersonInput) (Person, error)

	ListProfiles(ctx context.Context) ([]core.Profile, error)
	GetProfile(ctx context.Context, name string) (core.Profile, error)
	AddProfile(ctx context.Context, p core.Profile) (core.Profile, error)
	RemoveProfile(ctx context.Context, name string, in RemoveProfileInput) (core.Profile, error)
}

// CreateTaskInput is what a new task needs. Autopilot is decided here, once.
type CreateTaskInput struct {
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	ParentID    string `json:"parent_id,omitempty"`
	Profile     string `json:"profile,omitempty"`
	Autopilot   bool   `json:"autopilot,omitempty"`
	// Sandbox is none, bwrap, docker or podman; empty: the parent's, else
	// the profile's, else the configuration's (ADR 0048).
	Sandbox string `json:"sandbox,omitempty"`
	CWD     string `json:"cwd,omitempty"`
	// Prompt is queued as the task's first turn.
	Prompt string `json:"prompt,omitempty"`
	// Start launches the agent at once.
	Start bool `json:"start,omitempty"`
	// Assignee is a role or person name; default: the profile's own role.
	Assignee string `json:"assignee,omitempty"`
	// BlockedBy lists tasks this one waits on.
	BlockedBy []string `json:"blocked_by,omitempty"`
	// Surface overrides the MCP surface (e.g. "configuration").
	Surface string `json:"surface,omitempty"`
	// IdempotencyKey, when set, makes the create safe to retry: a second
	// create by the same actor with the same key returns the first task.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Workspace is worktree (or new), shared or inherit; empty decides by
	// the directory and the parent (docs/decisions/0027).
	Workspace string `json:"workspace,omitempty"`
	// Base is the ref a new worktree branches from (default: the main
	// checkout's HEAD, or the parent's branch for a child).
	Base string `json:"base,omitempty"`
	// Branch names a new worktree's branch (default kandev/<id>-<slug>).
	Branch string `json:"branch,omitempty"`
	// Budget is the task's own budget ("5USD", "2M-tokens"): a person's
	// to give, shared by its subtree.
	Budget string `json:"budget,omitempty"`
	// Host is the host its agent runs on (kandev host list), "local" for
	// this machine; empty: the parent's (docs/hosts.md).
	Host string `json:"host,omitempty"`
	// Source is the tracker issue the task is created from (the CLI
	// reads the issue: task create --from, kandev issues import). An issue
	// makes one task at most: a second create is refused (CodeConflict,
	// details {"task_id": the task that has it}; ADR 0068).
	Source *core.TaskSource `json:"source,omitempty"`
	// SourceText is the issue as its tracker gave it (bounded, cleaned);
	// the agent's first prompt carries it, marked as the tracker's.
	SourceText string `json:"source_text,omitempty"`
}

// TaskSummaries is a client that can list tasks as their summaries: each
// task holds only what a tree row shows (id, parent, title, status,
// assignee, badges, the latest session's state and times, a pending
// question, a stall), not its description, directory or session details.
// The TUI and the text list use it when their client has it; a task's own
// view (GetTask) has everything.
type TaskSummaries interface {
	ListTaskSummaries(ctx context.Context, in ListTasksInput) ([]core.Task, error)
}

// TaskSummaryStream is a client that hands over the first summaries of a
// listing as soon as they are read. Summaries come in the tree's order (a
// top-level task, then its subtree depth first), so the first ones are the
// tree's first rows: the TUI draws them while the rest of 100,000 arrive.
type TaskSummaryStream interface {
	// StreamTaskSummaries calls first once, with the first n summaries (all
	// of them when there are fewer), then returns the whole listing.
	// first's slice shares the returned slice's array, whose elements the
	// stream no longer writes once first has them.
	StreamTaskSummaries(ctx context.Context, in ListTasksInput, n int, first func([]core.Task)) ([]core.Task, error)
}

// ListTasksInput narrows a listing.
type ListTasksInput struct {
	All  bool   `json:"all,omitempty"`  // include archived tasks
	Root string `json:"root,omitempty"` // only this task and its descendants
}

// EditTaskInput changes a task's text. Autopilot is a pointer only so that a
// request that names it at all can be refused: it is fixed at creation.
type EditTaskInput struct {
	Title       *string `json:"title,omitempty"`
	Description *string `json:"description,omitempty"`
	Autopilot   *bool   `json:"autopilot,omitempty"`
}

// StartTaskInput optionally carries the prompt for the turn.
type StartTaskInput struct {
	Prompt string `json:"prompt,omitempty"`
}

// Delivery says how a message reaches a task.
type Delivery string

const (
	// DeliveryQueued waits for the current turn to end.
	DeliveryQueued Delivery = "queued"
	// DeliveryInterrupt cancels the running turn and delivers this instead.
	DeliveryInterrupt Delivery = "interrupt"
)

// MessageInput is a message to a task's agent.
type MessageInput struct {
	Text     string   `json:"text"`
	Delivery Delivery `json:"delivery,omitempty"`
	// ReplyTo answers a parent question of the target task.
	ReplyTo string `json:"reply_to_question_id,omitempty"`
	// Comments make the message a review of the task's diff: each is kept
	// on the task and the agent gets them all in one notice, each with the
	// lines of the hunk around it. Text is then optional.
	Comments []ReviewCommentInput `json:"comments,omitempty"`
}

// ReviewCommentInput is one comment on a task's diff: a line (or the
// lines Line..EndLine) of File as the diff's new side numbers them.
type ReviewCommentInput struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	EndLine int    `json:"end_line,omitempty"`
	Text    string `json:"text"`
}

// Review comment states: open until the lines it points at change in a
// later diff, then outdated.
const (
	ReviewOpen     = "open"
	ReviewOutdated = "outdated"
)

// ReviewComment is a comment kept on a task.
type ReviewComment struct {
	ID      int64   `json:"id"`
	TaskID  string  `json:"task_id"`
	Author  core.By `json:"author"`
	File    string  `json:"file"`
	Line    int     `json:"line"`
	EndLine int     `json:"end_line"`
	Text    string  `json:"text"`
	// Lines is the text of the commented lines when the comment was made;
	// Hunk the diff lines around them, as the agent was shown them.
	Lines     string    `json:"lines"`
	Hunk      string    `json:"hunk"`
	State     string    `json:"state"`
	CreatedAt time.Time `json:"created_at"`
}

// ReviewView is the review comments on a task, oldest first.
type ReviewView struct {
	TaskID   string          `json:"task_id"`
	Comments []ReviewComment `json:"comments"`
	// Unchecked says why the states could not be checked against a diff
	// (the worktree was discarded): every comment is then shown open.
	Unchecked string `json:"unchecked,omitempty"`
}

// QueueCap is the most messages one sender may have queued on a task, and
// the most that senders other than the operator and the task's direct
// parent may have queued on it together. The operator and the direct parent
// are never refused because of what others queued: no agent can lock them
// out of a task by filling its queue.
const QueueCap = 10

// QueuedItem is one entry waiting in a task's queue.
type QueuedItem struct {
	// ID identifies the item for `task queue --drop`; it does not change
	// while the item waits, unlike its position.
	ID int64 `json:"id"`
	// Position is its place in delivery order, from 1.
	Position int `json:"position"`
	// Kind: message, kickoff, answer, handoff, stalled, wake, redelivery...
	Kind string `json:"kind"`
	// Sender is who queued it: person:NAME, task:ID, or kandev itself.
	Sender core.By `json:"sender"`
	// Interrupt: it goes before the rest (an interrupt, an answer, a
	// redelivered prompt).
	Interrupt bool      `json:"interrupt"`
	Text      string    `json:"text"`
	QueuedAt  time.Time `json:"queued_at"`
}

// QueueView is a task's queue; after a drop, Dropped lists the removed ids.
type QueueView struct {
	TaskID  string       `json:"task_id"`
	Items   []QueuedItem `json:"items"`
	Dropped []int64      `json:"dropped,omitempty"`
}

// DropQueueInput names what to drop: one item by id, or All.
type DropQueueInput struct {
	ID  int64 `json:"id,omitempty"`
	All bool  `json:"all,omitempty"`
}

// MessageResult says what became of a message.
type MessageResult struct {
	TaskID string `json:"task_id"`
	// Status: "started" (a turn began with it), "queued", "interrupted"
	// (the running turn was cancelled for it), "answered", "already_answered".
	Status     string `json:"status"`
	QueueID    int64  `json:"queue_id,omitempty"`
	Position   int    `json:"position,omitempty"`
	QuestionID string `json:"question_id,omitempty"`
	// Comments are the review comments the message carried, as kept.
	Comments []ReviewComment `json:"comments,omitempty"`
}

// The inputs of the operations that take nothing but what they act on
// yet: each is a struct so that an operation's first option is a field
// (and a flag), not a change of its signature through every client. On
// the wire one travels only when some option is set (wire.Options), so a
// request that sets none is the one these operations always sent.
type (
	// StopTaskInput is a stop's options (none yet).
	StopTaskInput struct{}
	// ArchiveTaskInput is an archive's options (none yet).
	ArchiveTaskInput struct{}
	// DiscardTaskInput is a discard's options (none yet).
	DiscardTaskInput struct{}
	// RemoveRoleInput is a role removal's options (none yet).
	RemoveRoleInput struct{}
	// RemoveProfileInput is a profile removal's options (none yet).
	RemoveProfileInput struct{}
)

// AddPersonInput names the person to add.
type AddPersonInput struct {
	Name string `json:"name"`
}

// StopResult is the outcome of a stop: "stopped" or "not_running".
type StopResult struct {
	TaskID   string   `json:"task_id"`
	Result   string   `json:"result"`
	Sessions []string `json:"sessions,omitempty"`
}

// AnswerInput answers the task's pending user question: per item, an option
// number (1-based) or free text.
type AnswerInput struct {
	QuestionID string   `json:"question_id,omitempty"`
	Option     int      `json:"option,omitempty"`
	Text       string   `json:"text,omitempty"`
	Answers    []string `json:"answers,omitempty"`
}

// AnswerResult reports how the answer was taken.
type AnswerResult struct {
	TaskID     string `json:"task_id"`
	QuestionID string `json:"question_id"`
	// Status: "answered" or "already_answered".
	Status string `json:"status"`
	// Delivered: "waiting_call" (the agent's blocked call got it) or
	// "next_turn" (queued as the task's next turn).
	Delivered string `json:"delivered,omitempty"`
}

// ConversationInput pages a conversation by sequence number: forward from
// After, or, with Before set, the newest entries before it (Before -1: the
// conversation's tail).
type ConversationInput struct {
	After  int64 `json:"after,omitempty"`
	Before int64 `json:"before,omitempty"`
	Limit  int   `json:"limit,omitempty"`
}

// ConversationPage is one page of messages in order. Next is the cursor to
// read on (After), More says there is more after it; First is the cursor to
// read back (Before), Older says there is more before it.
type ConversationPage struct {
	TaskID   string         `json:"task_id"`
	Messages []core.Message `json:"messages"`
	Next     int64          `json:"next"`
	More     bool           `json:"more"`
	First    int64          `json:"first"`
	Older    bool           `json:"older"`
}

// HandoffInput names who gets the task: a role, a person, or "back" (whoever
// handed it to its current assignee).
type HandoffInput struct {
	To      string `json:"to"`
	Message string `json:"message,omitempty"`
}

// HandoffResult says where the task went.
type HandoffResult struct {
	TaskID string   `json:"task_id"`
	From   core.Ref `json:"from"`
	To     core.Ref `json:"to"`
	// Status: "handed_off"; Delivered says how the new assignee hears of it:
	// "turn" (its agent runs on the task), "waiting" (a person), or
	// "sign_off" (the delegating task's agent is woken to sign it off).
	Status    string `json:"status"`
	Delivered string `json:"delivered"`
}

// BlockInput adds (or removes) blockers.
type BlockInput struct {
	On     []string `json:"on"`
	Remove bool     `json:"remove,omitempty"`
}

// Role is a named agent identity: a profile and an optional manager.
type Role struct {
	Name      string    `json:"name"`
	Profile   string    `json:"profile"`
	ReportsTo *core.Ref `json:"reports_to"`
	// Implicit roles stand for a bare profile (tasks created with --profile).
	Implicit  bool      `json:"implicit"`
	CreatedAt time.Time `json:"created_at"`
}

// RoleInput creates or edits a role. Empty fields stay as they are on edit;
// ReportsTo "-" clears the manager.
type RoleInput struct {
	Name      string `json:"name,omitempty"`
	Profile   string `json:"profile,omitempty"`
	ReportsTo string `json:"reports_to,omitempty"`
}

// Person is a human who can be assigned tasks.
type Person struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

// EventsInput filters the event stream.
type EventsInput struct {
	TaskID string `json:"task_id,omitempty"`
	// Appends filters the message.appended events alone: "" every task's
	// (the default), AppendsNone none, else that task's. A front end that
	// shows one conversation asks for it and moves it with FollowAppends:
	// with many agents streaming, appends are nearly all the traffic.
	Appends string `json:"appends,omitempty"`
}

// AppendsNone is EventsInput.Appends asking for no task's appends.
const AppendsNone = "none"

// VersionInfo describes the running kandev.
type VersionInfo struct {
	Version       string `json:"version"`
	SchemaVersion int    `json:"schema_version"`
	PID           int    `json:"pid,omitempty"`
	Home          string `json:"home,omitempty"`
	// StartedAt is when the serving daemon's engine opened (zero from an
	// in-process engine's caller that never set it, or an older daemon).
	StartedAt time.Time `json:"started_at,omitzero"`
	// LiveRuns counts the agent runs (processes) the daemon holds now,
	// idle ones between turns included.
	LiveRuns int `json:"live_runs,omitempty"`
	// Running counts the tasks running as kandev status and the TUI count
	// them (core.Task.Running).
	Running int `json:"running"`
	// Resumed are the interrupted runs the daemon resumed by itself when
	// it started (none with --no-resume).
	Resumed []ResumedRun `json:"resumed,omitempty"`
}

// ResumedRun is an interrupted run a daemon resumed at its start.
type ResumedRun struct {
	TaskID string `json:"task_id"`
	Title  string `json:"title,omitempty"`
}

// ToolHost serves the MCP tools of kandev's sessions. The daemon puts the
// caller's identity in the context (an agent derived from its session
// token, or the external actor); no tool takes a sender id.
type ToolHost interface {
	ToolSurface(ctx context.Context) (ToolSurface, error)
	CallTool(ctx context.Context, name string, args []byte) (any, error)
}

// ToolSurface is what one MCP bridge may register.
type ToolSurface struct {
	Surface   string   `json:"surface"`
	Groups    []string `json:"groups"`
	Question  string   `json:"question_tool"`
	Tools     []string `json:"tools"`
	TaskID    string   `json:"task_id,omitempty"`
	SessionID string   `json:"session_id,omitempty"`
	Autopilot bool     `json:"autopilot"`
}

// DiffInput asks for a task's diff; without Patch only the file list and
// the --stat summary.
type DiffInput struct {
	Patch bool `json:"patch,omitempty"`
}

// MaxPatch bounds the patch a diff carries; a longer one is cut and
// marked Truncated (the worktree has the rest).
const MaxPatch = 4 << 20

// TaskDiff is what a task changed: commits on its branch and uncommitted
// work in its worktree, against the commit its branch started from.
type TaskDiff struct {
	TaskID string `json:"task_id"`
	Dir    string `json:"dir"`
	Branch string `json:"branch"`
	Base   string `json:"base"`
	// Into is the branch checked out in the main checkout, which a merge
	// goes into ("" when it is detached, or unknown).
	Into      string         `json:"into,omitempty"`
	Files     []DiffFileStat `json:"files"`
	Added     int            `json:"added"`
	Deleted   int            `json:"deleted"`
	Stat      string         `json:"stat"`
	Patch     string         `json:"patch,omitempty"`
	Truncated bool           `json:"truncated,omitempty"`
	// PatchBytes is the size of the whole patch, cut or not (0 when no
	// patch was asked for).
	PatchBytes int `json:"patch_bytes,omitempty"`
	// FilesTotal is how many files changed when Files lists only the
	// first of them (get_task_diff_kandev bounds its result); 0 otherwise.
	FilesTotal int `json:"files_total,omitempty"`
	// Comments are the review comments kept on the task, each open or
	// outdated by this diff.
	Comments []ReviewComment `json:"comments,omitempty"`
}

// DiffFileStat is one changed file (-1 lines for a binary file).
type DiffFileStat struct {
	Path    string `json:"path"`
	Added   int    `json:"added"`
	Deleted int    `json:"deleted"`
}

// MergeInput says how to merge a task's branch.
type MergeInput struct {
	Squash  bool   `json:"squash,omitempty"`
	Message string `json:"message,omitempty"`
}

// MergeResult says what a merge did.
type MergeResult struct {
	Task   core.Task `json:"task"`
	Branch string    `json:"branch"` // the task's branch
	Into   string    `json:"into"`   // the main checkout's branch
	Commit string    `json:"commit"` // its new head
}

// PushInput says where a task's branch is pushed (default origin).
type PushInput struct {
	Remote string `json:"remote,omitempty"`
}

// PushResult says what a push did.
type PushResult struct {
	Task      core.Task `json:"task"`
	Branch    string    `json:"branch"`
	Remote    string    `json:"remote"`
	Commit    string    `json:"commit"`    // the branch's head, as pushed
	Committed bool      `json:"committed"` // its uncommitted work was committed first
}

// PullRequestInput says how a task's pull request is opened: Base ""
// is the repository's default branch on the host.
type PullRequestInput struct {
	Remote string `json:"remote,omitempty"`
	Base   string `json:"base,omitempty"`
	Draft  bool   `json:"draft,omitempty"`
	// Path is the PATH of the command that asked (the CLI's, the UI's):
	// the daemon looks gh (glab) up there and runs it with it, so a CLI
	// installed after the daemon started is found. "" is the daemon's own
	// PATH; an agent's tool call always gets that one (ADR 0071).
	Path string `json:"path,omitempty"`
}

// PullRequestResult is the pull request opened for a task.
type PullRequestResult struct {
	Task core.Task  `json:"task"`
	URL  string     `json:"url"`
	Push PushResult `json:"push"`
}

// PruneInput asks for a prune; DryRun only lists what would go and why.
// Force names the worktree directories and branches a prune would keep
// otherwise (uncommitted changes, commits no other branch has, a directory
// that is not a worktree); a name that is none of those is an error.
type PruneInput struct {
	DryRun bool     `json:"dry_run,omitempty"`
	Force  []string `json:"force,omitempty"`
}

// PruneResult lists the worktrees a prune removed (or would remove) and
// the kandev branches deleted with them; Entries says, for every directory
// and branch no task owns, what was done with it and why.
type PruneResult struct {
	Removed  []string     `json:"removed"`
	Branches []string     `json:"branches"`
	Entries  []PruneEntry `json:"entries"`
}

// PruneEntry is one orphan a prune looked at.
type PruneEntry struct {
	Kind   string `json:"kind"`   // "worktree", "directory" or "branch"
	Name   string `json:"name"`   // the directory, or the branch
	Action string `json:"action"` // "remove" or "keep"
	Why    string `json:"why"`
}
