// Package prompt writes the instructions kandev places at the start of each
// agent session's first prompt. It is filled from the same capability set
// that decides the session's tools, so the two cannot disagree.
package prompt

import (
	"bytes"
	_ "embed"
	"fmt"
	"strings"
	"sync"
	"text/template"

	"github.com/kandev/kandev/core/capability"
)

//go:embed preamble.tmpl
var preambleText string

// preamble is parsed on first use, not at package init (see notices).
var preamble = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("preamble").Parse(preambleText))
})

// TaskInfo is the task identity the prompt shows.
type TaskInfo struct {
	ID          string
	Title       string
	Description string
	ParentID    string
	CWD         string
	Autopilot   bool
	// Workspace is "worktree" (its own git worktree), "inherit" (its
	// parent's) or "" (the directory as it is); Branch is the worktree's.
	Workspace string
	Branch    string
	// Issue is the tracker issue the task came from, rendered (the issue
	// notice), "" for none.
	Issue string
}

// coordinationSummaries explain each coordination tool in one line. Every
// tool a task surface can grant, other than the question and title tools
// that have their own sections, must appear here (a test checks it).
var coordinationSummaries = map[string]string{
	"create_task_kandev":                "create a subtask and start its agent (autopilot is decided here, once, and never inherited)",
	"list_tasks_kandev":                 "list your task's subtree with status and pending questions",
	"get_task_kandev":                   "read one task",
	"get_task_conversation_kandev":      "read a task's conversation, page by page",
	"get_task_diff_kandev":              "read what a task in your subtree changed in its git worktree (stat and a bounded patch), to review it before you sign it off",
	"message_task_kandev":               "send a message to a task (queued by default; delivery_mode \"interrupt\" for your direct children)",
	"stop_task_kandev":                  "halt your direct child task; its work and queued messages are kept",
	"handoff_task_kandev":               "hand a task to a role, a person, or back to whoever handed it to you",
	"set_task_status_kandev":            "set the status of a task in your subtree (sign off subtasks handed back to you)",
	"list_roles_kandev":                 "list the roles and people a task can be handed to",
	"list_profiles_kandev":              "list the agent profiles a task can run with",
	"save_profile_kandev":               "add or replace an agent profile",
	"remove_profile_kandev":             "remove a user profile",
	"open_pull_request_kandev":          "push your branch and open its pull request on GitHub, when asked for one",
	"get_pull_request_comments_kandev":  "read the review comments on your task's pull request",
	"open_merge_request_kandev":         "push your branch and open its merge request on GitLab, when asked for one",
	"get_merge_request_comments_kandev": "read the comments on your task's merge request",
}

// Coordination is one explained tool.
type Coordination struct{ Name, Summary string }

type data struct {
	Task         TaskInfo
	Set          capability.Set
	Coordination []Coordination
	HasStop      bool
	HasAnswer    bool
	HasHandoff   bool
	TitlePending bool
}

// Preamble renders the session instructions for a task and its set.
func Preamble(task TaskInfo, set capability.Set) (string, error) {
	d := data{Task: task, Set: set}
	for _, t := range set.Tools {
		switch {
		case t.Group == capability.GroupQuestion:
		case t.Group == capability.GroupTitle:
			d.TitlePending = true
		default:
			s, ok := coordinationSummaries[t.Name]
			if !ok {
				return "", fmt.Errorf("prompt: no summary for tool %s", t.Name)
			}
			d.Coordination = append(d.Coordination, Coordination{Name: t.Name, Summary: s})
			if t.Name == "stop_task_kandev" {
				d.HasStop = true
			}
			if t.Name == "message_task_kandev" {
				d.HasAnswer = true
			}
			if t.Name == "handoff_task_kandev" {
				d.HasHandoff = true
			}
		}
	}
	var b bytes.Buffer
	if err := preamble().Execute(&b, d); err != nil {
		return "", fmt.Errorf("prompt: %w", err)
	}
	return strings.TrimSpace(b.String()) + "\n", nil
}
