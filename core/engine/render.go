package engine

// Prompt rendering: what the agent reads for each queued item, from
// core/prompt's templates, at delivery.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/capability"
	"github.com/kandev/kandev/core/prompt"
	"github.com/kandev/kandev/store"
)

// noticeItem makes a queue row carry a notice: its template's name and
// data go in the row's meta and are rendered when the row is delivered;
// its text is what the queue view shows.
func noticeItem(it store.QueueItem, notice string, data any, meta map[string]any) store.QueueItem {
	if meta == nil {
		meta = map[string]any{}
	}
	meta["notice"], meta["data"] = notice, data
	it.Meta = metaJSON(meta)
	return it
}

// queuedNotice reads the notice a queue row carries, if it carries one.
func queuedNotice(it store.QueueItem) (prompt.Delivered, bool) {
	var d prompt.Delivered
	if !strings.Contains(it.Meta, `"notice"`) || json.Unmarshal([]byte(it.Meta), &d) != nil || d.Notice == "" {
		return prompt.Delivered{}, false
	}
	return d, true
}

// renderItem turns a queue item into the text the agent reads, at
// delivery: notices from their data; messages, kickoffs and redeliveries
// from the row itself. Rows queued before notices carried their data hold
// their text already rendered and are delivered as they are.
func (tn *Turns) renderItem(ctx context.Context, t core.Task, it store.QueueItem) string {
	if d, ok := queuedNotice(it); ok {
		body, err := tn.renderNotice(t, d)
		if err != nil {
			tn.k.log.Error("render notice", "task", t.ID, "queue_id", it.ID, "err", err)
			return it.Text
		}
		return body
	}
	var (
		name string
		data any
	)
	switch it.Kind {
	case itemKickoff:
		name, data = prompt.NoticeKickoff, struct{}{}
	case itemRedeliver:
		name, data = prompt.NoticeRedeliver, prompt.Message{From: tn.describeSender(it.Sender), Text: it.Text}
	case itemHandoff:
		// A sign-off request queued before notices: its open subtasks are
		// still counted as the turn starts.
		if strings.Contains(it.Meta, `"child_task_id"`) {
			return fmt.Sprintf("%s\nopen_subtasks: %d", it.Text, tn.chain.openSubtasks(t.ID))
		}
		return it.Text
	case itemQuestion, itemAnswer, itemStalled, itemWake:
		return it.Text
	default:
		name, data = prompt.NoticeMessage, prompt.Message{From: tn.describeSender(it.Sender), Text: it.Text}
	}
	body, err := prompt.RenderNotice(name, data)
	if err != nil {
		tn.k.log.Error("render notice", "task", t.ID, "queue_id", it.ID, "err", err)
		return it.Text
	}
	return body
}

// renderNotice renders a queued notice; a sign-off request says how many
// subtasks are still open (this one included), counted as the turn
// starts: signing the last one off brings no wake, so the agent decides
// its own next move here.
func (tn *Turns) renderNotice(t core.Task, d prompt.Delivered) (string, error) {
	data, err := d.Decode()
	if err != nil {
		return "", err
	}
	if s, ok := data.(*prompt.SignOff); ok {
		s.OpenSubtasks = tn.chain.openSubtasks(t.ID)
	}
	return prompt.RenderNotice(d.Notice, data)
}

func (tn *Turns) describeSender(sender string) string {
	a := core.ParseActor(sender)
	switch a.Kind {
	case core.ActorPerson:
		if a.Name == core.Operator {
			return "From the operator"
		}
		return "From " + a.Name
	case core.ActorAgent:
		if t, ok := tn.k.cached(a.TaskID); ok {
			return fmt.Sprintf("From task %s (%s)", t.ID, t.Title)
		}
		return "From task " + a.TaskID
	case core.ActorRole:
		return "From role " + a.Name
	default:
		return "From an external agent"
	}
}

func (tn *Turns) preamble(t core.Task, set capability.Set) (string, error) {
	info := prompt.TaskInfo{ID: t.ID, Title: t.Title, Description: t.Description,
		ParentID: t.ParentID, CWD: t.CWD, Autopilot: t.Autopilot}
	if w := t.Workspace; w != nil && (w.Mode == core.WorkspaceWorktree || w.Mode == core.WorkspaceInherit) {
		info.Workspace, info.Branch = w.Mode, w.Branch
	}
	// A task from a tracker: the issue's text once, in the issue notice
	// that marks it as the tracker's, even when the description is that text.
	issue, text, err := tn.k.issueNotice(context.Background(), t)
	if err != nil {
		return "", err
	}
	info.Issue = issue
	if issue != "" && strings.TrimSpace(info.Description) == strings.TrimSpace(text) {
		info.Description = ""
	}
	return prompt.Preamble(info, set)
}
