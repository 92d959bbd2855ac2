package capability

// Argument structs, one per tool that takes arguments, named by the
// tool's registry entry (args). Check decodes a call's arguments into
// these once they pass the schema's rules; a test keeps their JSON fields
// equal to the schema's parameters.

// CreateTaskArgs are create_task_kandev's arguments.
type CreateTaskArgs struct {
	Title       string `json:"title"`
	Description string `json:"description"`
	Prompt      string `json:"prompt"`
	ParentID    string `json:"parent_id"`
	Autopilot   bool   `json:"autopilot"`
	Sandbox     string `json:"sandbox"`
	Profile     string `json:"profile"`
	Start       *bool  `json:"start"`
	CWD         string `json:"cwd"`
	Workspace   string `json:"workspace"`
	Base        string `json:"base"`
}

// ListTasksArgs are list_tasks_kandev's arguments.
type ListTasksArgs struct {
	RootID          string `json:"root_id"`
	IncludeArchived bool   `json:"include_archived"`
	Status          string `json:"status"`
	ParentID        string `json:"parent_id"`
	Assignee        string `json:"assignee"`
	Limit           int    `json:"limit"`
	Cursor          string `json:"cursor"`
}

// List page sizes of list_tasks_kandev.
const (
	ListTasksDefaultLimit = 100
	ListTasksMaxLimit     = 500
)

// TaskIDArgs name one task (get_task_kandev).
type TaskIDArgs struct {
	TaskID string `json:"task_id"`
}

// DiffArgs are get_task_diff_kandev's arguments.
type DiffArgs struct {
	TaskID   string `json:"task_id"`
	StatOnly bool   `json:"stat_only"`
}

// MaxToolPatch bounds the patch get_task_diff_kandev returns: a model's
// context is not the place for a whole rewrite, and the stat still names
// every file.
const MaxToolPatch = 64 << 10

// ConversationArgs are get_task_conversation_kandev's arguments.
type ConversationArgs struct {
	TaskID string `json:"task_id"`
	After  int64  `json:"after"`
	Limit  int    `json:"limit"`
}

// MessageTaskArgs are message_task_kandev's arguments.
type MessageTaskArgs struct {
	TaskID            string          `json:"task_id"`
	Prompt            string          `json:"prompt"`
	DeliveryMode      string          `json:"delivery_mode"`
	ReplyToQuestionID string          `json:"reply_to_question_id"`
	Comments          []ReviewComment `json:"comments"`
}

// ReviewComment is one of message_task_kandev's comments on the task's
// diff (get_task_diff_kandev's patch numbers its lines).
type ReviewComment struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	EndLine int    `json:"end_line"`
	Text    string `json:"text"`
}

// MaxReviewComments bounds the comments one review carries.
const MaxReviewComments = 50

// OpenRequestArgs are open_pull_request_kandev's and
// open_merge_request_kandev's arguments.
type OpenRequestArgs struct {
	Draft bool   `json:"draft"`
	Base  string `json:"base"`
}

// StopTaskArgs are stop_task_kandev's arguments.
type StopTaskArgs struct {
	TaskID string `json:"task_id"`
}

// SaveProfileArgs are save_profile_kandev's arguments.
type SaveProfileArgs struct {
	Name    string   `json:"name"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
	Env     []string `json:"env"`
	MCP     *bool    `json:"mcp"`
	// StartTimeout is a Go duration; empty uses the daemon's default.
	StartTimeout string `json:"start_timeout"`
}

// NameArgs name one profile (remove_profile_kandev).
type NameArgs struct {
	Name string `json:"name"`
}

// SetTitleArgs are set_task_title_kandev's arguments.
type SetTitleArgs struct {
	Title string `json:"title"`
}

// QuestionArgs are the shared arguments of both question tools.
type QuestionArgs struct {
	Questions []QuestionItemArgs `json:"questions"`
	Context   string             `json:"context"`
}

// QuestionItemArgs is one question.
type QuestionItemArgs struct {
	Prompt  string              `json:"prompt"`
	Options []QuestionOptionArg `json:"options"`
}

// QuestionOptionArg is one choice.
type QuestionOptionArg struct {
	Label       string `json:"label"`
	Description string `json:"description"`
}

// HandoffArgs are handoff_task_kandev's arguments.
type HandoffArgs struct {
	To      string `json:"to"`
	Message string `json:"message"`
	TaskID  string `json:"task_id"`
}

// SetStatusArgs are set_task_status_kandev's arguments.
type SetStatusArgs struct {
	TaskID string `json:"task_id"`
	Status string `json:"status"`
}

// NoArgs is for tools without parameters.
type NoArgs struct{}
