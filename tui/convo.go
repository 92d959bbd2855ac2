package tui

import (
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/kandev/kandev/core"
)

// maxConversation bounds how many entries the detail pane keeps; older
// ones give way (the CLI's `task log` has them all).
const maxConversation = 5000

// conversation is the selected task's messages, ordered by sequence, and
// their rendered lines for the current width. Entries merge by sequence
// number, newest UpdatedAt wins, so a page and the live events may arrive
// in any order.
type conversation struct {
	taskID  string
	msgs    []core.Message
	cache   [][]string // rendered lines per message; nil = stale
	lines   []string   // all rendered lines, in order
	width   int
	dirty   bool
	dropped int // entries dropped off the front
}

func (c *conversation) reset(taskID string) {
	*c = conversation{taskID: taskID, dirty: true}
}

// upsert merges one message and reports whether anything changed.
func (c *conversation) upsert(m core.Message) bool {
	if m.TaskID != c.taskID {
		return false
	}
	n := len(c.msgs)
	if n == 0 || m.Seq > c.msgs[n-1].Seq {
		c.msgs = append(c.msgs, m)
		c.cache = append(c.cache, nil)
		c.trim()
		c.dirty = true
		return true
	}
	i := sort.Search(n, func(i int) bool { return c.msgs[i].Seq >= m.Seq })
	if i < n && c.msgs[i].Seq == m.Seq {
		if m.UpdatedAt.Before(c.msgs[i].UpdatedAt) {
			return false
		}
		c.msgs[i] = m
		c.cache[i] = nil
		c.dirty = true
		return true
	}
	if i == 0 && c.dropped > 0 {
		return false // older than what we keep
	}
	c.msgs = append(c.msgs, core.Message{})
	copy(c.msgs[i+1:], c.msgs[i:])
	c.msgs[i] = m
	c.cache = append(c.cache, nil)
	copy(c.cache[i+1:], c.cache[i:])
	c.cache[i] = nil
	c.trim()
	c.dirty = true
	return true
}

func (c *conversation) trim() {
	if over := len(c.msgs) - maxConversation; over > 0 {
		c.msgs = append(c.msgs[:0:0], c.msgs[over:]...)
		c.cache = append(c.cache[:0:0], c.cache[over:]...)
		c.dropped += over
	}
}

// render brings the rendered lines up to date for width w. Only changed
// entries are rendered again.
func (c *conversation) render(st styles, w int, loc *time.Location) {
	if w != c.width {
		for i := range c.cache {
			c.cache[i] = nil
		}
		c.width, c.dirty = w, true
	}
	if !c.dirty {
		return
	}
	c.lines = c.lines[:0]
	if c.dropped > 0 {
		c.lines = append(c.lines, st.dim.Render(truncate("… earlier entries not shown (kandev task log "+c.taskID+")", w)))
	}
	for i := range c.msgs {
		if c.cache[i] == nil {
			c.cache[i] = renderMessage(st, c.msgs[i], w, loc)
		}
		c.lines = append(c.lines, c.cache[i]...)
	}
	c.dirty = false
}

// messageMeta is the part of a message's meta the log shows.
type messageMeta struct {
	Status string            `json:"status"` // tool call status or question status
	Title  string            `json:"title"`
	Kind   core.QuestionKind `json:"kind"`
	Answer *struct {
		Text string `json:"text"`
	} `json:"answer"`
	Resolution string `json:"resolution"`
	Delivery   string `json:"delivery_mode"`
}

// renderMessage lays out one entry: a timestamped head, then the text
// with a hanging indent. Agent text is sanitized first, so escape
// sequences and control characters never reach the terminal.
func renderMessage(st styles, m core.Message, w int, loc *time.Location) []string {
	var meta messageMeta
	if len(m.Meta) > 0 {
		_ = json.Unmarshal(m.Meta, &meta)
	}
	ts := m.CreatedAt.In(loc).Format("15:04:05")
	label, text := "", sanitize(m.Text)
	style := st.logNote
	switch m.Kind {
	case core.MsgPrompt:
		label, style = authorLabel(m.Author)+" ›", st.logYou
		if meta.Delivery == string(core.DeliveryInterrupt) {
			label = authorLabel(m.Author) + " (interrupt) ›"
		}
	case core.MsgAgent:
		label, style = "agent ›", st.logAgent
	case core.MsgThought:
		label, style = "thinking ›", st.dim
	case core.MsgToolCall:
		label, style = "tool ›", st.logTool
		if meta.Title != "" {
			text = sanitize(meta.Title) + " " + toolStatus(meta.Status)
		}
	case core.MsgPlan:
		label, style = "plan ›", st.logTool
	case core.MsgQuestion:
		who := "you"
		if meta.Kind == core.QuestionParent {
			who = "parent"
		}
		label, style = "? for "+who+" ›", st.logQ
		text += "\n[" + questionState(meta) + "]"
	case core.MsgAnswer:
		label, style = "answer ("+authorLabel(m.Author)+") ›", st.logYou
	case core.MsgHandoff:
		label, style = "handoff ›", st.logQ
	default:
		label = "·"
	}
	head := ts + " " + label + " "
	indent := min(width(head), max(2, w/3))
	lines := wrap(text, max(1, w-indent))
	out := make([]string, 0, len(lines)+1)
	pad := strings.Repeat(" ", indent)
	h := st.dim.Render(ts) + " " + style.Render(label) + " "
	if width(head) > indent {
		// Very narrow: the head takes its own line.
		out = append(out, truncate(h, w))
		h = pad
	}
	for i, l := range lines {
		if i == 0 {
			out = append(out, h+l)
			continue
		}
		out = append(out, pad+l)
	}
	if m.Kind == core.MsgThought || m.Kind == core.MsgStatus || m.Kind == core.MsgTurnEnd || m.Kind == core.MsgUserNotice {
		for i := range out {
			out[i] = st.dim.Render(out[i])
		}
	}
	return out
}

func toolStatus(s string) string {
	switch s {
	case "completed":
		return "✓"
	case "failed":
		return "✗ failed"
	case "in_progress", "pending", "":
		return "…"
	}
	return "[" + s + "]"
}

func questionState(m messageMeta) string {
	switch core.QuestionStatus(m.Status) {
	case core.QuestionPending:
		if m.Kind == core.QuestionParent {
			return "pending: waiting on the parent task"
		}
		return "pending: press a to answer"
	case core.QuestionAnswered:
		if m.Answer != nil {
			return "answered: " + oneLine(m.Answer.Text)
		}
		return "answered"
	case "":
		return "asked"
	}
	s := m.Status
	if m.Resolution != "" {
		s += ": " + m.Resolution
	}
	return s
}

// authorLabel names who wrote an entry, as the operator thinks of them.
func authorLabel(a string) string {
	switch {
	case a == "person:"+core.Operator:
		return "you"
	case strings.HasPrefix(a, "person:"):
		return strings.TrimPrefix(a, "person:")
	case strings.HasPrefix(a, "task:"):
		return "task " + strings.TrimPrefix(a, "task:")
	case a == "":
		return "kandev"
	}
	return a
}
