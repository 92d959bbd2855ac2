package capability

// Tool is one MCP tool: its contract with the model (description, schema,
// annotations) and which surfaces or group carry it.
type Tool struct {
	Name        string
	Title       string
	Description string
	Params      []Param
	// Annotations, set truthfully: agents such as Codex refuse unannotated
	// tools when running unattended. Only the provider group's tools reach
	// the open world (the git host).
	ReadOnly    bool
	Destructive bool
	Idempotent  bool
	OpenWorld   bool
	// Waits: the call may block until a person acts (progress is reported).
	Waits bool

	// Exactly one of Surfaces (base tools) or Group (additive tools).
	Surfaces []Surface
	Group    Group
	// Host: the git host a provider group tool is for (HostGitHub, HostGitLab).
	Host string

	// Reply is how the bridge shows the result to a model that reads only
	// a result's text (the structured content is always the JSON).
	Reply Reply
	// args makes the tool's argument struct (argsOf); nil for a tool
	// without parameters (NoArgs).
	args func() any
}

// Reply is a form of a tool result's text.
type Reply string

const (
	// ReplyJSON: the text is the result's JSON.
	ReplyJSON Reply = ""
	// ReplyTaskPage: a page of tasks ({tasks, next_cursor}) as one line
	// per task, a fraction of the JSON's size.
	ReplyTaskPage Reply = "task-page"
	// ReplyDiff: a api.TaskDiff as a summary line, the stat and the patch
	// as git prints them.
	ReplyDiff Reply = "diff"
)

// argsOf is a Tool's args for argument struct A.
func argsOf[A any]() any { return new(A) }

// NewArgs returns a pointer to a fresh argument struct for the tool.
func (t Tool) NewArgs() any {
	if t.args == nil {
		return &NoArgs{}
	}
	return t.args()
}

// Git hosts the provider group has tools for (a repository's origin).
const (
	HostGitHub = "github"
	HostGitLab = "gitlab"
)

// Param is one argument of a tool.
type Param struct {
	Name        string
	Type        string // string, boolean, integer, array, object
	Description string
	Required    bool
	Enum        []string
	Default     any
	Min, Max    *int   // integer bounds, or array length bounds
	Items       *Param // array element
	Props       []Param
	// BridgeDir: on the external surface (no task, so no task directory),
	// the bridge fills the argument with the directory it runs in when the
	// call leaves it out. No rule of the schema.
	BridgeDir bool
}

func intp(i int) *int { return &i }

var (
	taskSurfaces = []Surface{KanbanTask, OfficeTask}
	allTaskish   = []Surface{KanbanTask, OfficeTask, Configuration}
)

var questionParams = []Param{
	{Name: "questions", Type: "array", Required: true, Min: intp(1), Max: intp(4),
		Description: "One to four questions. Give options when the choice is between known alternatives; leave them out for a free-text answer.",
		Items: &Param{Type: "object", Props: []Param{
			{Name: "prompt", Type: "string", Required: true, Description: "The question, answerable on its own."},
			{Name: "options", Type: "array", Min: intp(2), Max: intp(6),
				Description: "Two to six choices.",
				Items: &Param{Type: "object", Props: []Param{
					{Name: "label", Type: "string", Required: true, Description: "Short label of the choice."},
					{Name: "description", Type: "string", Description: "What choosing it implies."},
				}}},
		}}},
	{Name: "context", Type: "string", Description: "What you have done and why you need the answer, so it can be given without reading your whole conversation."},
}

// registry is the one table of every kandev tool.
var registry = []Tool{
	{
		Name:  "create_task_kandev",
		args:  argsOf[CreateTaskArgs],
		Title: "Create task",
		Description: "Create a task, by default a subtask of your own task, and start its agent. " +
			"Use it to delegate a well-scoped piece of work. Returns the new task.",
		Params: []Param{
			{Name: "title", Type: "string", Required: true, Description: "Short title of the new task."},
			{Name: "description", Type: "string", Description: "What the task is about: goal, constraints, where to look."},
			{Name: "prompt", Type: "string", Description: "The first message its agent receives. Defaults to the description."},
			{Name: "parent_id", Type: "string", Description: "Parent task id. Defaults to your own task (on the external surface: no parent)."},
			{Name: "autopilot", Type: "boolean", Default: false,
				Description: "Run the new task on autopilot: its agent works without asking the operator and sends any question to its parent task (you). " +
					"Fixed at creation, never changed later, and never inherited: a child of an autopilot task is not on autopilot unless you set this."},
			{Name: "sandbox", Type: "string", Enum: []string{"none", "bwrap", "docker", "podman"},
				Description: "Where the new task's agent runs: none (the host), bwrap, docker or podman. Defaults to the parent's; never less confined than the parent's (none < bwrap < docker = podman)."},
			{Name: "profile", Type: "string", Description: "Agent profile that runs the task (see list_profiles_kandev). Defaults to your own task's profile (on the external surface, to kandev's default profile: the configured one, else the first agent installed)."},
			{Name: "start", Type: "boolean", Default: true, Description: "Start the task's agent at once. When false the task waits in todo."},
			{Name: "cwd", Type: "string", BridgeDir: true, Description: "Absolute workspace directory. Defaults to the parent's (on the external surface, to where your agent runs)."},
			{Name: "workspace", Type: "string", Enum: []string{"inherit", "new"}, Default: "inherit",
				Description: "Where the new task works when yours has a git worktree: inherit = in your worktree, on your branch (it sees and changes your files); " +
					"new = in a worktree of its own, on a new branch from `base`, so its changes stay apart until merged."},
			{Name: "base", Type: "string", Description: "For workspace new: the branch or commit its branch starts from. Defaults to your task's branch."},
		},
		Surfaces: []Surface{KanbanTask, OfficeTask, External},
	},
	{
		Name:        "list_tasks_kandev",
		args:        argsOf[ListTasksArgs],
		Title:       "List tasks",
		Description: "List a task and its descendants (default: your own task's subtree; on the external surface, every task) with status, autopilot and pending questions, a page at a time: when `next_cursor` is set, call again with it as `cursor` for the next page.",
		Params: []Param{
			{Name: "root_id", Type: "string", Description: "List this task and its descendants instead."},
			{Name: "include_archived", Type: "boolean", Default: false, Description: "Include archived tasks."},
			{Name: "status", Type: "string", Enum: []string{"todo", "in_progress", "review", "done", "cancelled"}, Description: "Only tasks in this status."},
			{Name: "parent_id", Type: "string", Description: "Only the direct children of this task."},
			{Name: "assignee", Type: "string", Description: "Only tasks held by this role or person (\"role:NAME\", \"person:NAME\", or a bare name)."},
			{Name: "limit", Type: "integer", Min: intp(1), Max: intp(ListTasksMaxLimit), Default: ListTasksDefaultLimit, Description: "Tasks per page, 1-500."},
			{Name: "cursor", Type: "string", Description: "The `next_cursor` of the previous page."},
		},
		ReadOnly: true, Idempotent: true,
		Surfaces: []Surface{KanbanTask, OfficeTask, Configuration, External},
		Reply:    ReplyTaskPage,
	},
	{
		Name:        "get_task_kandev",
		args:        argsOf[TaskIDArgs],
		Title:       "Get task",
		Description: "Get one task: fields, status, workspace (its directory, git branch and base commit), latest session, pending question, and spend: its tokens and cost and its subtree's, its context window's use, and the budget that governs it (spent, remaining; a person sets budgets, no tool can).",
		Params: []Param{
			{Name: "task_id", Type: "string", Description: "Task id. Defaults to your own task."},
		},
		ReadOnly: true, Idempotent: true,
		Surfaces: []Surface{KanbanTask, OfficeTask, Configuration, External},
	},
	{
		Name:  "get_task_diff_kandev",
		args:  argsOf[DiffArgs],
		Title: "Read a task's diff",
		Description: "What a task changed in its git worktree against the commit its branch started from: commits on its branch plus uncommitted work, as a stat and a patch. " +
			"Use it to review a subtask's work before you sign it off. Only your own task and tasks in your subtree. " +
			"A patch over 64 KiB (or a stat of hundreds of files) is cut at a line boundary and ends with a marker giving the totals and where the rest is.",
		Params: []Param{
			{Name: "task_id", Type: "string", Description: "Task id: a task in your subtree. Defaults to your own task."},
			{Name: "stat_only", Type: "boolean", Default: false, Description: "Only the files changed and their line counts, no patch."},
		},
		ReadOnly: true, Idempotent: true,
		Surfaces: taskSurfaces,
		Reply:    ReplyDiff,
	},
	{
		Name:        "get_task_conversation_kandev",
		args:        argsOf[ConversationArgs],
		Title:       "Read a task's conversation",
		Description: "Read a task's conversation (prompts, agent output, tool calls, questions, answers) in order, one page at a time. Pass the returned next cursor as after to read on.",
		Params: []Param{
			{Name: "task_id", Type: "string", Description: "Task id. Defaults to your own task."},
			{Name: "after", Type: "integer", Min: intp(0), Default: 0, Description: "Return entries after this sequence number (the previous page's next)."},
			{Name: "limit", Type: "integer", Min: intp(1), Max: intp(200), Default: 50, Description: "Entries per page, 1-200."},
		},
		ReadOnly: true, Idempotent: true,
		Surfaces: []Surface{KanbanTask, OfficeTask, External},
	},
	{
		Name:  "message_task_kandev",
		args:  argsOf[MessageTaskArgs],
		Title: "Message a task",
		Description: "Send a message to another task's agent. delivery_mode queued (default) waits for its current turn to end; " +
			"interrupt cancels its running turn and delivers this message instead, and is allowed only to the task's direct parent. " +
			"To answer a child's question, pass the question's id as reply_to_question_id. " +
			"To review a task's work, pass comments on lines of its diff (get_task_diff_kandev): " +
			"its agent gets them in one message, each with the lines around it, and they are kept on the task.",
		Params: []Param{
			{Name: "task_id", Type: "string", Required: true, Description: "The task to message."},
			{Name: "prompt", Type: "string", Required: true, Description: "The message (with comments: the review's summary)."},
			{Name: "delivery_mode", Type: "string", Enum: []string{"queued", "interrupt"}, Default: "queued",
				Description: "queued: deliver as its next turn. interrupt (direct parent only): cancel its running turn and deliver this now."},
			{Name: "reply_to_question_id", Type: "string", Description: "Answer this pending question of your child task."},
			{Name: "comments", Type: "array", Min: intp(1), Max: intp(MaxReviewComments),
				Description: "Review comments on the task's diff, each on a line (or lines line to end_line) of a changed file as the diff's new side numbers them.",
				Items: &Param{Type: "object", Props: []Param{
					{Name: "file", Type: "string", Required: true, Description: "The file's path in the diff."},
					{Name: "line", Type: "integer", Required: true, Min: intp(1), Description: "The line, numbered as in the new file."},
					{Name: "end_line", Type: "integer", Min: intp(1), Description: "The last line of a range (default: line)."},
					{Name: "text", Type: "string", Required: true, Description: "The comment."},
				}}},
		},
		Surfaces: taskSurfaces,
	},
	{
		Name:  "stop_task_kandev",
		args:  argsOf[StopTaskArgs],
		Title: "Stop a child task",
		Description: "Halt your direct child task: its running agent is stopped and the task waits in review with its work and queued messages kept. " +
			"Returns stopped, or not_running when nothing was running. Only the direct parent may stop a task.",
		Params: []Param{
			{Name: "task_id", Type: "string", Required: true, Description: "Your direct child task to stop."},
		},
		Destructive: true, Idempotent: true,
		Surfaces: taskSurfaces,
	},
	{
		Name:  "handoff_task_kandev",
		args:  argsOf[HandoffArgs],
		Title: "Hand a task on",
		Description: "Give a task to a role (its agent takes over on the task) or a person (the task waits for them). " +
			"to \"back\" returns it to whoever handed it to you. End each turn with a handoff: hand the task on when your part is done, " +
			"hand it to whoever must answer when you need something. The role that hands a task away stops working it.",
		Params: []Param{
			{Name: "to", Type: "string", Required: true, Description: "A role name, a person name, or \"back\"."},
			{Name: "message", Type: "string", Description: "What the next holder needs to know: what you did, what is left, what you need."},
			{Name: "task_id", Type: "string", Description: "The task to hand on. Defaults to your own task; may be a task in your subtree."},
		},
		Surfaces: taskSurfaces,
	},
	{
		Name:  "set_task_status_kandev",
		args:  argsOf[SetStatusArgs],
		Title: "Set a task's status",
		Description: "Move a task in your subtree to todo, in_progress, review, done or cancelled. " +
			"No role marks its own task done: hand it on for sign-off instead; sign off (done) the subtasks handed back to you.",
		Params: []Param{
			{Name: "task_id", Type: "string", Required: true, Description: "The task (not your own, for done)."},
			{Name: "status", Type: "string", Required: true, Enum: []string{"todo", "in_progress", "review", "done", "cancelled"}, Description: "The new status."},
		},
		Idempotent: true,
		Surfaces:   taskSurfaces,
	},
	{
		Name:        "list_roles_kandev",
		Title:       "List roles and people",
		Description: "List the roles (with their profile and manager) and the people a task can be handed to.",
		ReadOnly:    true, Idempotent: true,
		Surfaces: []Surface{OfficeTask, Configuration},
	},
	{
		Name:        "list_profiles_kandev",
		Title:       "List profiles",
		Description: "List the agent profiles tasks can run with: command, and whether each accepts kandev's MCP server (needed for autopilot).",
		ReadOnly:    true, Idempotent: true,
		Surfaces: allTaskish,
	},
	{
		Name:        "save_profile_kandev",
		args:        argsOf[SaveProfileArgs],
		Title:       "Save a profile",
		Description: "Add an agent profile, or replace the one of that name (a built-in name overrides the built-in).",
		Params: []Param{
			{Name: "name", Type: "string", Required: true, Description: "Profile name: lowercase letters, digits, '.', '_' or '-'."},
			{Name: "command", Type: "string", Required: true, Description: "The ACP agent executable."},
			{Name: "args", Type: "array", Items: &Param{Type: "string"}, Description: "Arguments."},
			{Name: "env", Type: "array", Items: &Param{Type: "string"}, Description: "Environment entries, KEY=VALUE."},
			{Name: "mcp", Type: "boolean", Default: true, Description: "The agent accepts an injected MCP server. Autopilot tasks need it."},
			{Name: "start_timeout", Type: "string", Description: "How long the agent may take to start, as a duration such as \"3m\"; empty uses the daemon's default (60s)."},
		},
		Idempotent: true,
		Surfaces:   []Surface{Configuration},
	},
	{
		Name:        "remove_profile_kandev",
		args:        argsOf[NameArgs],
		Title:       "Remove a profile",
		Description: "Remove a user profile (removing an override brings the built-in back).",
		Params: []Param{
			{Name: "name", Type: "string", Required: true, Description: "Profile name."},
		},
		Destructive: true, Idempotent: true,
		Surfaces: []Surface{Configuration},
	},
	{
		Name:        "set_task_title_kandev",
		args:        argsOf[SetTitleArgs],
		Title:       "Set your task's title",
		Description: "Your task's title is a placeholder: set a short title (under 80 characters) that says what the task is.",
		Params: []Param{
			{Name: "title", Type: "string", Required: true, Description: "The new title."},
		},
		Idempotent: true,
		Group:      GroupTitle,
	},
	{
		Name:  AskUser,
		args:  argsOf[QuestionArgs],
		Title: "Ask the operator",
		Description: "Ask the operator (the person running kandev) a question and wait for the answer. " +
			"Use it only when a wrong guess would waste real work. If the wait is cut off, the answer arrives as your next message.",
		Params: questionParams,
		Waits:  true,
		Group:  GroupQuestion,
	},
	{
		Name:  AskParent,
		args:  argsOf[QuestionArgs],
		Title: "Ask your parent task",
		Description: "Ask your direct parent task a question. It does not wait: it records the question and returns its id. " +
			"This must be the last action of your turn: end your turn right after it. The answer arrives as your next message.",
		Params: questionParams,
		Group:  GroupQuestion,
	},
	{
		Name:  "open_pull_request_kandev",
		args:  argsOf[OpenRequestArgs],
		Title: "Open your task's pull request",
		Description: "Push your task's branch to the repository's GitHub remote (origin; uncommitted work committed first) and open a pull request for it with gh, " +
			"titled by the task, its body your last handoff message and the diff's stat. Returns its URL, kept on the task. Use it when the operator asked for a pull request.",
		Params: []Param{
			{Name: "draft", Type: "boolean", Description: "Open it as a draft."},
			{Name: "base", Type: "string", Description: "The branch to merge into (default: the repository's default branch)."},
		},
		OpenWorld: true,
		Group:     GroupProvider, Host: HostGitHub,
	},
	{
		Name:  "get_pull_request_comments_kandev",
		Title: "Read your pull request's review",
		Description: "Read the review of your task's pull request on GitHub (gh): its state, the reviews and their verdicts, the conversation's comments, " +
			"and the comments on lines of the diff with their file and line. Address them, push again (open_pull_request_kandev updates the branch), then end your turn.",
		ReadOnly: true, Idempotent: true, OpenWorld: true,
		Group: GroupProvider, Host: HostGitHub,
	},
	{
		Name:  "open_merge_request_kandev",
		args:  argsOf[OpenRequestArgs],
		Title: "Open your task's merge request",
		Description: "Push your task's branch to the repository's GitLab remote (origin; uncommitted work committed first) and open a merge request for it with glab, " +
			"titled by the task, its description your last handoff message and the diff's stat. Returns its URL, kept on the task. Use it when the operator asked for a merge request.",
		Params: []Param{
			{Name: "draft", Type: "boolean", Description: "Open it as a draft."},
			{Name: "base", Type: "string", Description: "The branch to merge into (default: the project's default branch)."},
		},
		OpenWorld: true,
		Group:     GroupProvider, Host: HostGitLab,
	},
	{
		Name:  "get_merge_request_comments_kandev",
		Title: "Read your merge request's review",
		Description: "Read the discussion of your task's merge request on GitLab (glab): its state and its comments, those on lines of the diff with their file and line. " +
			"Address them, push again (open_merge_request_kandev updates the branch), then end your turn.",
		ReadOnly: true, Idempotent: true, OpenWorld: true,
		Group: GroupProvider, Host: HostGitLab,
	},
}
