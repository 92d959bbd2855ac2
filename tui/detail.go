package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/kandev/kandev/core"
)

// detailPane shows the selected task's fields and its live conversation.
// It follows new output unless the operator scrolled up; then it keeps
// its place (pos) whatever arrives, is read back or leaves the window.
type detailPane struct {
	convo   conversation
	gen     int  // bumps on every task switch and reload; stale pages are dropped
	loading bool // the tail (or a reload) has not arrived yet
	err     string
	pos     logPos // the first line shown, when not following
	follow  bool   // stick to the newest output
	// While not following: the newest entry when the operator scrolled
	// away, the lines from it on when last rendered, and the lines added
	// below since.
	seenSeq  int64
	seenTail int
	unseen   int
	// refreshTo: a reload reads the window again forward, up to this
	// sequence number.
	refreshTo int64
	// settled: the selection rested on this task for the debounce, so
	// what is read for it alone (its change summary) may be read.
	settled bool
}

func (d *detailPane) switchTo(id string) {
	d.convo.reset(id)
	d.gen++
	d.loading = id != ""
	d.err = ""
	d.pos, d.follow, d.unseen, d.refreshTo = logPos{}, true, 0, 0
	d.settled = false
}

// afterRender counts the lines added below while the operator reads
// further up (not on a width change, which renders everything again).
func (d *detailPane) afterRender(widthChanged bool) {
	if d.follow {
		return
	}
	t := d.convo.linesFrom(d.seenSeq)
	if !widthChanged && !d.loading && t > d.seenTail {
		d.unseen += t - d.seenTail
	}
	d.seenTail = t
}

// header renders the task's fields in w cells, within the pane's height h:
// the title and the description wrap, the other fields take a line each.
// The header takes at most half the pane (more only when its one-line
// fields need it); a title or description that does not fit ends in "…".
func detailHeader(st styles, t *core.Task, w, h int, now time.Time) []string {
	return detailHeaderWith(st, t, nil, w, h, now)
}

// detailHeaderWith is detailHeader with the task's change summary, when
// it was read (ch is for the selected task only).
func detailHeaderWith(st styles, t *core.Task, ch *changeState, w, h int, now time.Time) []string {
	if t == nil {
		return []string{st.dim.Render(fit("no task selected", w))}
	}
	var fields []string
	add := func(s string) { fields = append(fields, truncate(s, w)) }
	// Texts from agents and the engine (last words, an error, a question)
	// wrap at word boundaries, up to a few lines each so the log keeps room.
	most := clamp(h/4, 1, 4)
	addLong := func(s string) { fields = append(fields, clipLines(wrap(s, w), most, w)...) }
	stage := core.StageOf(t)
	glyph, _ := stageGlyph(stage)
	parts := []string{t.ID, glyph + " " + string(stage), "profile " + t.Profile}
	if t.Autopilot {
		parts = append(parts, "AUTO")
	}
	if t.Sandbox != "" && t.Sandbox != "none" {
		parts = append(parts, "sandbox "+t.Sandbox)
	}
	if t.Host != "" {
		// Where its agent runs (docs/hosts.md); "auto" until placed.
		parts = append(parts, "host "+t.Host)
	}
	if t.ParentID != "" {
		parts = append(parts, "parent "+t.ParentID)
	} else {
		parts = append(parts, "root")
	}
	if a := t.Assignee; a != nil {
		parts = append(parts, "assignee "+assigneeLabel(t))
	}
	for _, l := range joinFitting(parts, w) {
		add(l)
	}
	if s := t.Session; s != nil {
		seg := []string{fmt.Sprintf("session %s %s", s.ID, strings.ReplaceAll(string(s.State), "_", " "))}
		if at := turnStart(t); !at.IsZero() {
			seg = append(seg, "this turn "+longDuration(now.Sub(at)))
		}
		seg = append(seg, fmt.Sprintf("turns %d", s.Turns))
		if s.PID > 0 && s.State.Live() {
			seg = append(seg, fmt.Sprintf("pid %d", s.PID))
		}
		if t.Queued > 0 {
			seg = append(seg, fmt.Sprintf("%d queued", t.Queued))
		}
		if t.Halted {
			seg = append(seg, "STOPPED (r resumes)")
		}
		for _, l := range joinFitting(seg, w) {
			add(l)
		}
		// A failed run's error is an error; any other ended run just says
		// why it ended.
		if s.Error != "" {
			addLong(st.errText.Render("error: ") + oneLine(s.Error))
		} else if s.EndReason != "" {
			addLong("ended: " + oneLine(s.EndReason))
		}
	} else {
		line := "never ran (r starts it)"
		if t.Queued > 0 {
			line += fmt.Sprintf(" · %d queued", t.Queued)
		}
		add(line)
	}
	for _, l := range workspaceLines(t, ch) {
		add(l)
	}
	if src := t.Source; src != nil {
		// The tracker issue it came from, with its link (docs/trackers.md).
		line := "from " + oneLine(src.Ref)
		if src.URL != "" {
			line += " · " + oneLine(src.URL)
		}
		addLong(line)
	}
	for _, l := range usageDetail(t) {
		add(l)
	}
	if s := t.Stalled; s != nil && t.Stuck() {
		line := st.badgeBad.Render("STUCK") + " stalled in " + s.From.String() + ", nobody to escalate to: it waits for you"
		if s.Detail != "" {
			line += ": " + oneLine(s.Detail)
		}
		addLong(line)
	} else if s != nil && t.BackToYou() {
		addLong(st.badgeYou.Render("your turn") + " ended without handing on: " + orNothing(oneLine(s.Detail)))
	} else if s != nil && t.OverBudget() {
		if core.ByLimit(s.Detail) {
			// A spend limit's: the detail says when it rolls and how to raise it.
			addLong(st.badgeBad.Render("BUDGET") + " " + oneLine(s.Detail))
		} else {
			addLong(st.badgeBad.Render("BUDGET") + " " + oneLine(s.Detail) + "; raise it: $ (or kandev task budget " + t.ID + " --add AMOUNT)")
		}
	} else if s != nil {
		line := st.badgeWarn.Render("ESCALATED") + " " + oneLine(s.Reason) + " from " + s.From.String()
		if s.Detail != "" {
			line += ": " + oneLine(s.Detail)
		}
		addLong(line)
	}
	if t.Interrupted {
		add(st.badgeStop.Render("INTERRUPTED") + " a daemon exit cut its run short; r resumes it")
	}
	if t.Waiting != "" {
		addLong(st.badgeWarn.Render("WAITING") + " " + oneLine(t.Waiting))
	}
	if len(t.BlockedBy) > 0 {
		add("blocked by " + strings.Join(t.BlockedBy, ", "))
	}
	if q := t.PendingQuestion; q != nil && q.Status == core.QuestionPending {
		ask := firstPrompt(q)
		if q.Kind == core.QuestionParent {
			addLong(st.badgePar.Render("?parent") + " asks task " + q.ParentTaskID + ": " + ask)
		} else {
			addLong(st.badgeYou.Render("?you") + " asks you (a to answer): " + ask)
		}
	}
	// The questions its subtasks asked it, while a person holds it: the
	// one its escalation names first (ADR 0069).
	if n := len(t.ChildQuestions); n > 0 {
		head := st.badgeYou.Render("?you") + fmt.Sprintf(" %d from subtasks, a answers each in turn:", n)
		if t.Assignee == nil || !t.Assignee.IsOperator() {
			head = st.badgePar.Render("?subtasks") + fmt.Sprintf(" %d from its subtasks wait on %s:", n, assigneeLabel(t))
		}
		addLong(head)
		for i, cq := range t.ChildQuestions {
			line := fmt.Sprintf("%d. %s %s: %s", i+1, cq.TaskID, cq.Question.ID, firstPrompt(&cq.Question))
			if cq.Named {
				line += " (escalated)"
			}
			addLong(line)
		}
	}

	title := wrap(oneLine(t.Title), w)
	desc := paragraphs(t.Description, w)
	hasDesc := min(len(desc), 1)
	budget := max(h/2, len(fields)+1+hasDesc)
	room := budget - len(fields)
	title = clipLines(title, max(1, room-hasDesc), w)
	desc = clipLines(desc, room-len(title), w)

	out := make([]string, 0, len(title)+len(fields)+len(desc))
	for _, l := range title {
		out = append(out, st.title.Render(l))
	}
	out = append(out, fields...)
	for _, l := range desc {
		out = append(out, st.dim.Render(l))
	}
	return out
}

// workspaceLines say where the task works: its branch and what it
// changed there, then its directory.
func workspaceLines(t *core.Task, ch *changeState) []string {
	ws := t.Workspace
	if ws == nil {
		if t.CWD == "" {
			return nil
		}
		return []string{"dir " + t.CWD}
	}
	dir := ws.Dir
	if dir == "" {
		dir = t.CWD
	}
	var first string
	switch ws.Mode {
	case core.WorkspaceWorktree:
		first = "branch " + ws.Branch + " · "
		switch {
		case ch == nil || ch.taskID != t.ID || (ch.diff == nil && ch.err == ""):
			first += "changes …"
		case ch.err != "":
			first += "changes: " + ch.err
		default:
			first += changeSummary(*ch.diff)
			if len(ch.diff.Files) > 0 {
				first += " (v shows them)"
			}
		}
	case core.WorkspaceInherit:
		first = "branch " + ws.Branch + " · in its parent's worktree"
	case core.WorkspaceDiscarded:
		first = "worktree discarded"
	default:
		first = "shared directory (no worktree)"
	}
	out := []string{first}
	if ws.PullRequest != "" {
		out = append(out, "pull request "+ws.PullRequest)
	}
	if dir != "" {
		out = append(out, "dir "+dir)
	}
	return out
}

// paragraphs wraps a description in w cells, dropping blank lines (the
// header has little room).
func paragraphs(s string, w int) []string {
	var out []string
	for _, l := range strings.Split(sanitize(s), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, wrap(l, w)...)
		}
	}
	return out
}

// clipLines keeps at most n of lines, ending the last kept one with "…"
// when some went.
func clipLines(lines []string, n, w int) []string {
	if n <= 0 {
		return nil
	}
	if len(lines) <= n {
		return lines
	}
	lines = lines[:n]
	lines[n-1] = ansi.Truncate(lines[n-1], max(0, w-1), "") + "…"
	return lines
}

// turnStart is when the task's running turn began, or zero when no turn
// is running (or the engine did not say).
func turnStart(t *core.Task) time.Time {
	if isRunning(t) && !t.Session.TurnStartedAt.IsZero() {
		return t.Session.TurnStartedAt
	}
	return time.Time{}
}

// longDuration is an elapsed time to the second (or minute): 42s, 4m05s,
// 1h07m, 3d04h.
func longDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%02dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
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
	return clamp(d.convo.lineOf(d.pos), 0, max(0, total-h))
}

// scroll moves the log by delta lines.
func (d *detailPane) scroll(delta, h int) {
	d.setStart(d.start(h)+delta, h)
}

// setStart shows the log from line s; reaching the bottom follows again
// (unless the window was cut before the newest entries).
func (d *detailPane) setStart(s, h int) {
	c := &d.convo
	total := len(c.lines)
	s = clamp(s, 0, max(0, total-h))
	if s >= total-h && !c.newer {
		d.toBottom()
		return
	}
	if d.follow {
		d.follow = false
		d.seenSeq, d.unseen = c.last(), 0
		d.seenTail = c.linesFrom(d.seenSeq)
	}
	d.pos = c.posOf(s)
}

func (d *detailPane) toBottom() { d.follow, d.unseen = true, 0 }

// stateLabel is what the log's divider says of the pane's state, the
// same in the pane and zoomed: an error, loading, or scrolled away from
// the newest (the scroll states after prefix). It is "" while the pane
// follows the log with nothing to say.
func (d *detailPane) stateLabel(prefix string) string {
	switch {
	case d.err != "":
		return " log: " + d.err + " "
	case d.loading:
		return " log (loading…) "
	case !d.follow && d.convo.newer:
		return " " + prefix + "scrolled back (G jumps to the newest) "
	case !d.follow && d.unseen > 0:
		return fmt.Sprintf(" %s%d new lines below (G follows) ", prefix, d.unseen)
	case !d.follow:
		return " " + prefix + "scrolled (G follows) "
	}
	return ""
}

// view draws the pane in w×h cells.
func (d *detailPane) view(st styles, t *core.Task, ch *changeState, w, h int, focused bool, now time.Time) []string {
	out := detailHeaderWith(st, t, ch, w, h, now)
	if len(out) > h {
		out = out[:h]
	}
	lh := logHeight(len(out), h)
	if len(out) < h {
		label := d.stateLabel("log · ")
		if label == "" {
			label = " log "
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
		out = append(out, lines[s:end]...)
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

// orNothing stands in for an empty text.
func orNothing(s string) string {
	if s == "" {
		return "(nothing)"
	}
	return s
}

// usageDetail is the detail pane's spend: tokens and cost, the subtree's
// when its children spent; then the context window's use and the budget.
func usageDetail(t *core.Task) []string {
	var lines, more []string
	if u := t.Usage; u != nil {
		line := "spent " + u.UsageLine(false)
		if u.Tree.Tokens != u.Own.Tokens || u.Tree.CostText() != u.Own.CostText() {
			line += " · subtree " + u.UsageLine(true)
		}
		lines = append(lines, line)
		if c := u.ContextLine(); c != "" {
			more = append(more, "context "+c)
		}
	}
	if b := t.Budget; b != nil && b.Amount.Kind != "" {
		line := "budget " + b.Amount.Format(b.Spent) + " of " + b.Amount.Format(b.Amount.Value)
		for _, c := range b.Unpriced {
			line += " and " + core.FormatCost(c.Amount, c.Currency) + " unpriced"
		}
		more = append(more, line)
	}
	if len(more) > 0 {
		lines = append(lines, strings.Join(more, " · "))
	}
	return lines
}

// joinFitting joins parts with " · " into lines of at most w cells,
// breaking only between parts, so a narrow pane shows "sandbox bwrap" or
// "pid 4242" whole on the next line rather than cut; a part wider than
// the pane has a line of its own (cut by the caller).
func joinFitting(parts []string, w int) []string {
	var lines []string
	cur := ""
	for _, p := range parts {
		switch {
		case cur == "":
			cur = p
		case width(cur)+3+width(p) <= w:
			cur += " · " + p
		default:
			lines = append(lines, cur)
			cur = p
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}
