package prompt

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"text/template"
)

//go:embed notices.tmpl
var noticesText string

// notices is parsed on first use, not at package init: every kandev
// command links this package, and only the daemon renders notices.
var notices = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("notices").Option("missingkey=error").
		Funcs(template.FuncMap{"orNone": orNone, "inc": func(i int) int { return i + 1 }, "quote": quote}).Parse(noticesText))
})

// orNone stands in for an empty message, detail or summary.
func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(no message)"
	}
	return s
}

// quote sets lines of a diff apart from the text around them: every line
// starts with "| ", so none reads as an instruction of its own.
func quote(s string) string {
	s = strings.TrimRight(s, "\n")
	return "| " + strings.ReplaceAll(s, "\n", "\n| ")
}

// Notice names: one template each in notices.tmpl.
const (
	NoticeKickoff     = "kickoff"
	NoticeMessage     = "message"
	NoticeRedeliver   = "redeliver"
	NoticeQuestion    = "question"
	NoticeAnswer      = "answer"
	NoticeStallReport = "stall_report"
	NoticeEscalation  = "escalation"
	NoticeHandoff     = "handoff"
	NoticeSignOff     = "signoff"
	NoticeWake        = "wake"
	NoticeBudget      = "budget"
	// NoticeBudgetResume redelivers a turn's message that a reached
	// budget cut (data: Message).
	NoticeBudgetResume = "budget_resume"
	// NoticeBudgetContinue tells an agent whose turn a reached budget cut
	// to go on where it stopped, without its message again (data:
	// Message; its text is not repeated).
	NoticeBudgetContinue = "budget_continue"
	NoticeReview         = "review"
	// NoticeIssue is the tracker issue a task was created from, in its
	// agent's first prompt (data: Issue).
	NoticeIssue = "issue"
)

// Why a stalled role stalled, as its notices word it.
const (
	WhyFailed     = "failed"     // its run failed
	WhyUnanswered = "unanswered" // it left its own subtask's question unanswered
	WhyLastWords  = ""           // its turn ended without handing the task on
)

// Message is a message from someone (From: "From the operator", "From
// task X (title)") and a redelivery of one after a restart.
type Message struct {
	From string `json:"from"`
	Text string `json:"text"`
}

// Question is an autopilot child's question, delivered to its parent.
type Question struct {
	ChildID    string `json:"child_task_id"`
	ChildTitle string `json:"child_title"`
	Questions  string `json:"questions"` // the questions and their context, as listed
	QuestionID string `json:"question_id"`
}

// Answer is the answer to a task's own question, from its parent task
// (ParentTaskID) or from the operator.
type Answer struct {
	ParentTaskID string `json:"parent_task_id,omitempty"`
	// Holder is the person the parent task is with, who answered in its
	// place (ADR 0069); "" when the parent's agent did.
	Holder     string `json:"holder,omitempty"`
	QuestionID string `json:"question_id"`
	Text       string `json:"text"`
}

// StallReport tells the task that created a subtask that the subtask's
// role stalled on it.
type StallReport struct {
	ChildID    string `json:"child_task_id"`
	ChildTitle string `json:"child_title"`
	Role       string `json:"role"`
	Why        string `json:"why,omitempty"`
	Detail     string `json:"detail"`
}

// Escalation hands a stalled task to the manager of its role (From).
type Escalation struct {
	TaskID string `json:"task_id"`
	Title  string `json:"title"`
	From   string `json:"from"`
	Why    string `json:"why,omitempty"`
	Detail string `json:"detail"`
}

// Handoff tells a role a task was handed to it.
type Handoff struct {
	TaskID  string `json:"task_id"`
	Title   string `json:"title"`
	Role    string `json:"role"`
	By      string `json:"by"`
	Message string `json:"message"`
}

// SignOff hands a subtask back to its parent for sign-off. OpenSubtasks
// (this one included) is counted as the turn starts, not when queued.
type SignOff struct {
	ChildID      string `json:"child_task_id"`
	ChildTitle   string `json:"child_title"`
	By           string `json:"by"`
	Message      string `json:"message"`
	OpenSubtasks int    `json:"-"`
}

// Wake tells a task that its subtask or blocker finished. OpenSubtasks is
// counted when the wake is queued, without the finishing task.
type Wake struct {
	Relation     string `json:"relation"` // "subtask" or "blocker"
	TaskID       string `json:"task_id"`
	Title        string `json:"title"`
	Status       string `json:"status"`
	Summary      string `json:"summary"`
	OpenSubtasks int    `json:"open_subtasks"`
}

// Budget warns a tree's running agents that it spent most of its budget
// (80%): Holder is the task whose budget it is.
type Budget struct {
	HolderID    string `json:"holder_id"`
	HolderTitle string `json:"holder_title"`
	Own         bool   `json:"own"` // the holder is the task told
	Spent       string `json:"spent"`
	Amount      string `json:"amount"`
	Percent     int    `json:"percent"`
}

// Review is comments on the task's diff, from someone (From as in
// Message), with the review's own message (Text, may be empty).
type Review struct {
	From     string          `json:"from"`
	Text     string          `json:"text"`
	Comments []ReviewComment `json:"comments"`
}

// ReviewComment is one comment of a Review: the file, the line or lines
// (EndLine > Line for a range) and the hunk lines around them.
type ReviewComment struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	EndLine int    `json:"end_line"`
	Text    string `json:"text"`
	Hunk    string `json:"hunk"`
}

// Issue is the tracker issue a task was created from: the tracker's name
// (GitHub, GitLab, Linear), its reference and web page, and its text as
// kandev kept it (bounded, cleaned; untrusted).
type Issue struct {
	Tracker string `json:"tracker"`
	Ref     string `json:"ref"`
	URL     string `json:"url"`
	Text    string `json:"text"`
}

// RenderNotice renders the named notice from its data.
func RenderNotice(name string, data any) (string, error) {
	var b bytes.Buffer
	if err := notices().ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("prompt: render %s notice: %w", name, err)
	}
	return b.String(), nil
}

// Delivered is a notice as a queue row carries it: its name and its data
// (JSON), rendered only when the row is delivered.
type Delivered struct {
	Notice string          `json:"notice"`
	Data   json.RawMessage `json:"data"`
}

// Decode reads a queued notice's data into the type its template takes.
func (d Delivered) Decode() (any, error) {
	var v any
	switch d.Notice {
	case NoticeKickoff:
		return struct{}{}, nil
	case NoticeMessage, NoticeRedeliver, NoticeBudgetResume, NoticeBudgetContinue:
		v = &Message{}
	case NoticeQuestion:
		v = &Question{}
	case NoticeAnswer:
		v = &Answer{}
	case NoticeStallReport:
		v = &StallReport{}
	case NoticeEscalation:
		v = &Escalation{}
	case NoticeHandoff:
		v = &Handoff{}
	case NoticeSignOff:
		v = &SignOff{}
	case NoticeWake:
		v = &Wake{}
	case NoticeBudget:
		v = &Budget{}
	case NoticeReview:
		v = &Review{}
	case NoticeIssue:
		v = &Issue{}
	default:
		return nil, fmt.Errorf("prompt: unknown notice %q", d.Notice)
	}
	if err := json.Unmarshal(d.Data, v); err != nil {
		return nil, fmt.Errorf("prompt: %s notice data: %w", d.Notice, err)
	}
	return v, nil
}
