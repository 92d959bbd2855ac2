package tui

import (
	"fmt"
	"strings"

	"github.com/kandev/kandev/core"
)

// detailPane shows the selected task's fields and its live conversation.
// It follows new output unless the operator scrolled up.
type detailPane struct {
	convo   conversation
	gen     int  // bumps on every task switch; stale pages are dropped
	loading bool // the first page has not arrived yet
	err     string
	offset  int  // first conversation line shown, when not following
	follow  bool // stick to the newest output
	unseen  int  // lines added below while not following
}

func (d *detailPane) switchTo(id string) {
	d.convo.reset(id)
	d.gen++
	d.loading = id != ""
	d.err = ""
	d.offset, d.follow, d.unseen = 0, true, 0
}

// header renders the task's fields in w cells.
func detailHeader(st styles, t *core.Task, w int) []string {
	if t == nil {
		return []string{st.dim.Render(fit("no task selected", w))}
	}
	var out []string
	add := func(s string) { out = append(out, truncate(s, w)) }
	add(st.title.Render(truncate(oneLine(t.Title), w)))
	glyph, _ := statusGlyph(t.Status)
	parts := []string{t.ID, glyph + " " + string(t.Status), "profile " + t.Profile}
	if t.Autopilot {
		parts = append(parts, "AUTO")
	}
	if t.ParentID != "" {
		parts = append(parts, "parent "+t.ParentID)
	} else {
		parts = append(parts, "root")
	}
	if a := t.Assignee; a != nil {
		parts = append(parts, "assignee "+assigneeLabel(t))
	}
	add(strings.Join(parts, " · "))
	if s := t.Session; s != nil {
		line := fmt.Sprintf("session %s %s · turns %d", s.ID, strings.ReplaceAll(string(s.State), "_", " "), s.Turns)
		if s.PID > 0 && s.State.Live() {
			line += fmt.Sprintf(" · pid %d", s.PID)
		}
		if t.Queued > 0 {
			line += fmt.Sprintf(" · %d queued", t.Queued)
		}
		if t.Halted {
			line += " · STOPPED (r resumes)"
		}
		add(line)
		if s.Error != "" {
			// A failed run's error is an error; any other ended run just says
			// why it ended.
			if s.State == core.SessionFailed {
				add(st.errText.Render("error: ") + oneLine(s.Error))
			} else {
				add("ended: " + oneLine(s.Error))
			}
		}
	} else {
		line := "never ran (r starts it)"
		if t.Queued > 0 {
			line += fmt.Sprintf(" · %d queued", t.Queued)
		}
		add(line)
	}
	if s := t.Stalled; s != nil {
		line := st.badgeWarn.Render("ESCALATED") + " " + oneLine(s.Reason) + " from " + s.From
		if s.Detail != "" {
			line += ": " + oneLine(s.Detail)
		}
		add(line)
	}
	if t.Waiting != "" {
		add(st.badgeWarn.Render("WAITING") + " " + oneLine(t.Waiting))
	}
	if len(t.BlockedBy) > 0 {
		add("blocked by " + strings.Join(t.BlockedBy, ", "))
	}
	if q := t.PendingQuestion; q != nil && q.Status == core.QuestionPending {
		ask := firstPrompt(q)
		if q.Kind == core.QuestionParent {
			add(st.badgePar.Render("?parent") + " asks task " + q.ParentTaskID + ": " + ask)
		} else {
			add(st.badgeYou.Render("?you") + " asks you (a to answer): " + ask)
		}
	}
	if d := oneLine(t.Description); d != "" {
		add(st.dim.Render(truncate(d, w)))
	}
	return out
}

func firstPrompt(q *core.QuestionInfo) string {
	if len(q.Questions) > 0 {
		s := oneLine(q.Questions[0].Prompt)
		if len(q.Questions) > 1 {
			s += fmt.Sprintf(" (+%d more)", len(q.Questions)-1)
		}
		return s
	}
	return oneLine(q.Text)
}

// logHeight is how many conversation lines fit under the header.
func logHeight(headerLines, h int) int { return max(0, h-headerLines-1) }

// start is the first conversation line to show in h lines.
func (d *detailPane) start(h int) int {
	total := len(d.convo.lines)
	if d.follow {
		return max(0, total-h)
	}
	return clamp(d.offset, 0, max(0, total-h))
}

// scroll moves the log by delta lines; reaching the bottom follows again.
func (d *detailPane) scroll(delta, h int) {
	total := len(d.convo.lines)
	d.offset = clamp(d.start(h)+delta, 0, max(0, total-h))
	d.follow = d.offset >= total-h
	if d.follow {
		d.unseen = 0
	}
}

func (d *detailPane) toBottom() { d.follow, d.unseen = true, 0 }

// view draws the pane in w×h cells.
func (d *detailPane) view(st styles, t *core.Task, w, h int, focused bool) []string {
	out := detailHeader(st, t, w)
	if len(out) > h {
		out = out[:h]
	}
	lh := logHeight(len(out), h)
	if len(out) < h {
		label := " log "
		switch {
		case d.err != "":
			label = " log: " + d.err + " "
		case d.loading:
			label = " log (loading…) "
		case !d.follow && d.unseen > 0:
			label = fmt.Sprintf(" log · %d new lines below (G follows) ", d.unseen)
		case !d.follow:
			label = " log · scrolled (G follows) "
		}
		rule := "─"
		if focused {
			rule = "━"
		}
		line := strings.Repeat(rule, 2) + label
		line += strings.Repeat(rule, max(0, w-width(line)))
		out = append(out, st.divider.Render(truncate(line, w)))
	}
	if lh > 0 {
		lines := d.convo.lines
		s := d.start(lh)
		end := min(len(lines), s+lh)
		for _, l := range lines[s:end] {
			out = append(out, l)
		}
	}
	for i := range out {
		if gap := w - width(out[i]); gap > 0 {
			out[i] += strings.Repeat(" ", gap)
		}
	}
	for len(out) < h {
		out = append(out, strings.Repeat(" ", w))
	}
	return out
}
