package cmd

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/textsafe"
)

// statusGlyph gives each status a mark that reads without color.
func statusGlyph(s core.Status) string {
	switch s {
	case core.StatusTodo:
		return "○"
	case core.StatusInProgress:
		return "●"
	case core.StatusReview:
		return "◐"
	case core.StatusDone:
		return "✓"
	case core.StatusCancelled:
		return "✗"
	}
	return "?"
}

// badges are the plain-text markers of a task row.
func badges(t core.Task) []string {
	var b []string
	if t.Autopilot {
		b = append(b, "AUTO")
	}
	if q := t.PendingQuestion; q != nil {
		if q.Kind == core.QuestionParent {
			b = append(b, "?parent")
		} else {
			b = append(b, "?you")
		}
	}
	if t.Session != nil {
		switch t.Session.State {
		case core.SessionRunning, core.SessionStarting:
			b = append(b, "running")
		case core.SessionFailed:
			b = append(b, "failed")
		}
	}
	if t.Halted {
		b = append(b, "stopped")
	}
	if t.Interrupted {
		b = append(b, "interrupted")
	}
	if t.Queued > 0 {
		b = append(b, fmt.Sprintf("queued:%d", t.Queued))
	}
	if t.Stuck() {
		b = append(b, "stuck")
	} else if t.Escalated() {
		b = append(b, "escalated")
	}
	if t.Waiting != "" {
		b = append(b, "waiting")
	}
	if t.YourTurn {
		b = append(b, "your-turn")
	}
	if t.Archived {
		b = append(b, "archived")
	}
	return b
}

func assigneeLabel(t core.Task) string {
	if t.Assignee == nil {
		return t.Profile
	}
	if t.Assignee.IsPerson() {
		return "@" + t.Assignee.Name
	}
	if t.Assignee.IsTask() {
		return "^" + t.Assignee.Name // waits on the task that delegated it, for sign-off
	}
	if t.Assignee.Name == t.Profile {
		return t.Profile
	}
	return t.Assignee.Name + "(" + t.Profile + ")"
}

// writeTree prints tasks as a tree. Tasks whose parent is not in the list
// (archived and hidden) print as roots.
func writeTree(w io.Writer, tasks []core.Task) {
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	present := make(map[string]bool, len(tasks))
	children := map[string][]int{}
	var roots []int
	for i, t := range tasks {
		present[t.ID] = true
		_ = i
	}
	for i, t := range tasks {
		if t.ParentID != "" && present[t.ParentID] {
			children[t.ParentID] = append(children[t.ParentID], i)
		} else {
			roots = append(roots, i)
		}
	}
	var walk func(i int, prefix, branch string)
	walk = func(i int, prefix, branch string) {
		t := tasks[i]
		line := fmt.Sprintf("%s%s%s %-11s %s %s", prefix, branch, statusGlyph(t.Status), t.Status, t.ID, textsafe.Line(t.Title))
		extra := append([]string{assigneeLabel(t)}, badges(t)...)
		fmt.Fprintf(bw, "%s  [%s]\n", line, strings.Join(extra, " "))
		kids := children[t.ID]
		next := prefix
		switch branch {
		case "├─ ":
			next += "│  "
		case "└─ ":
			next += "   "
		}
		for j, k := range kids {
			b := "├─ "
			if j == len(kids)-1 {
				b = "└─ "
			}
			walk(k, next, b)
		}
	}
	for _, r := range roots {
		walk(r, "", "")
	}
}

func writeTaskDetail(w io.Writer, t core.Task) {
	row := func(k, v string) { fmt.Fprintf(w, "%-17s %s\n", k+":", v) }
	row("id", t.ID)
	row("title", textsafe.Line(t.Title))
	row("status", statusGlyph(t.Status)+" "+string(t.Status))
	row("autopilot", fmt.Sprintf("%v", t.Autopilot))
	row("profile", t.Profile)
	if t.Assignee != nil {
		row("assignee", t.Assignee.Describe())
	}
	if t.HandedBy != nil {
		row("handed by", t.HandedBy.Describe())
	}
	if t.Stuck() {
		row("stuck", "stalled in "+t.Stalled.From+" at "+t.Stalled.At.Local().Format(time.DateTime)+
			" with nobody to escalate to; it waits for you (message it, hand it on, or set its status)")
		row("detail", strings.Join(strings.Fields(t.Stalled.Detail), " "))
	} else if t.BackToYou() {
		row("your turn", "ended without handing on: "+orNothing(strings.Join(strings.Fields(t.Stalled.Detail), " ")))
	} else if t.Stalled != nil {
		row("escalated", t.Stalled.Reason+" from "+t.Stalled.From+" at "+t.Stalled.At.Local().Format(time.DateTime))
	}
	if t.Waiting != "" {
		row("waiting", t.Waiting)
	}
	if len(t.BlockedBy) > 0 {
		row("blocked by", strings.Join(t.BlockedBy, ", "))
	}
	if t.ParentID != "" {
		row("parent", t.ParentID)
	} else {
		row("parent", "(root)")
	}
	row("cwd", t.CWD)
	if w := t.Workspace; w != nil && w.Mode != core.WorkspaceShared {
		row("workspace", w.Mode+", branch "+w.Branch+" from "+shortID(w.Base)+" of "+w.Repo)
	}
	row("created", t.CreatedAt.Local().Format(time.DateTime)+" by "+t.CreatedBy)
	row("updated", t.UpdatedAt.Local().Format(time.DateTime))
	if t.Archived {
		row("archived", t.ArchivedAt.Local().Format(time.DateTime))
	}
	if t.Halted {
		row("halted", "stopped; queued messages wait for `kandev task start`")
	}
	if t.Interrupted {
		row("interrupted", "a daemon exit cut its run short; `kandev task start` resumes it")
	}
	if t.Queued > 0 {
		row("queued", fmt.Sprintf("%d message(s)", t.Queued))
	}
	if s := t.Session; s != nil {
		v := fmt.Sprintf("%s %s (turns %d", s.ID, s.State, s.Turns)
		if s.PID > 0 {
			v += fmt.Sprintf(", pid %d", s.PID)
		}
		v += ")"
		row("session", v)
		// A completed or stopped session's reason says how it ended; only
		// a failed one is an error.
		switch {
		case s.Error == "":
		case s.State == core.SessionFailed:
			row("session error", s.Error)
		default:
			row("session ended", s.Error)
		}
	}
	if q := t.PendingQuestion; q != nil {
		who := "you (kandev task answer " + t.ID + ")"
		if q.Kind == core.QuestionParent {
			who = "parent task " + q.ParentTaskID
		}
		id := q.ID
		if q.Kind == core.QuestionPermission {
			id += " (permission)"
		}
		row("pending question", id+" for "+who)
		for _, l := range strings.Split(q.Text, "\n") {
			fmt.Fprintf(w, "%-17s %s\n", "", l)
		}
	}
	if t.Description != "" {
		fmt.Fprintf(w, "\n%s\n", t.Description)
	}
}

// formatMessage renders one conversation entry for `task log`.
func formatMessage(m core.Message) string {
	ts := m.CreatedAt.Local().Format("15:04:05")
	who := m.Author
	switch m.Kind {
	case core.MsgPrompt:
		return fmt.Sprintf("%s %s › %s", ts, core.AuthorLabel(who), m.Text)
	case core.MsgAgent:
		return fmt.Sprintf("%s agent › %s", ts, strings.TrimRight(m.Text, "\n"))
	case core.MsgThought:
		return fmt.Sprintf("%s agent (thinking) › %s", ts, strings.TrimRight(m.Text, "\n"))
	case core.MsgToolCall:
		return fmt.Sprintf("%s tool › %s", ts, m.Text)
	case core.MsgPlan:
		return fmt.Sprintf("%s plan ›\n%s", ts, indent(m.Text))
	case core.MsgQuestion:
		return fmt.Sprintf("%s question › %s", ts, m.Text)
	case core.MsgAnswer:
		return fmt.Sprintf("%s answer (%s) › %s", ts, core.AuthorLabel(who), m.Text)
	case core.MsgTurnEnd, core.MsgStatus, core.MsgPermission, core.MsgHandoff:
		return fmt.Sprintf("%s · %s", ts, m.Text)
	}
	return fmt.Sprintf("%s %s › %s", ts, m.Kind, m.Text)
}

func indent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = "    " + l
	}
	return strings.Join(lines, "\n")
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// orNothing stands in for an empty text.
func orNothing(s string) string {
	if s == "" {
		return "(nothing)"
	}
	return s
}
