package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/kandev/kandev/core"
)

// badgeKind names a marker on a task row. Every badge is text, so rows
// read the same with NO_COLOR.
type badgeKind int

const (
	badgeAuto        badgeKind = iota // autopilot task
	badgeAskYou                       // pending question for the operator
	badgeAskParent                    // pending question for the parent task
	badgeFailed                       // the last run failed
	badgeStopped                      // halted by a stop
	badgeEscalated                    // it stalled and went up the reporting chain
	badgeWaiting                      // its assignee's agent cannot start
	badgeBlocked                      // it waits on unfinished tasks
	badgeStuck                        // it stalled with nobody to escalate to
	badgeInterrupted                  // a daemon exit cut its run short; it waits for a start
	badgeBudget                       // its tree spent its budget, or a spend limit was reached; it is with a person
)

var badgeText = [...]string{
	badgeAuto:        "AUTO",
	badgeAskYou:      "?you",
	badgeAskParent:   "?parent",
	badgeFailed:      "FAILED",
	badgeStopped:     "STOPPED",
	badgeEscalated:   "ESCALATED",
	badgeWaiting:     "WAITING",
	badgeBlocked:     "BLOCKED",
	badgeStuck:       "STUCK",
	badgeInterrupted: "INTERRUPTED",
	badgeBudget:      "BUDGET",
}

// badgeLegend says what each badge means, for the help screen; one entry
// per badge, so a new badge cannot be left out of the legend.
var badgeLegend = [len(badgeText)]string{
	badgeAuto:        "autopilot",
	badgeAskYou:      "waits on your answer",
	badgeAskParent:   "waits on its parent",
	badgeFailed:      "last run failed",
	badgeStopped:     "halted by a stop",
	badgeEscalated:   "stalled, handed up",
	badgeWaiting:     "cannot start",
	badgeBlocked:     "waits on tasks",
	badgeStuck:       "stalled, nobody to hand it to",
	badgeInterrupted: "a daemon exit cut its run; r resumes it",
	badgeBudget:      "its tree spent its budget, or a spend limit was reached",
}

func (k badgeKind) style(st styles) lipgloss.Style {
	switch k {
	case badgeAuto:
		return st.badgeAuto
	case badgeAskYou:
		return st.badgeYou
	case badgeAskParent:
		return st.badgePar
	case badgeFailed, badgeStuck, badgeBudget:
		return st.badgeBad
	case badgeStopped, badgeBlocked, badgeInterrupted:
		return st.badgeStop
	default:
		return st.badgeWarn
	}
}

// glyphKind picks the status glyph's style.
type glyphKind int

const (
	glyphTodo glyphKind = iota
	glyphBusy
	glyphSpin
	glyphReview
	glyphDone
	glyphFail
)

// spinnerFrames animate a running task's glyph.
var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// rowModel is what one tree row says about a task, before layout.
type rowModel struct {
	glyph     string
	glyphKind glyphKind
	title     string
	id        string
	// who moves the task forward: its assignee (@you, @person, a role)
	// or, for a task assigned to its profile's own role, the profile.
	who     string
	elapsed string
	badges  []badgeKind
	// cost is what the task's agents reported spending ("$0.42"), its
	// subtree's on a parent ("Σ$1.20"); "" when unknown.
	cost string
}

func rowFor(t *core.Task, now time.Time, frame int) rowModel {
	since := lastChange(t)
	if at := turnStart(t); !at.IsZero() {
		since = at // a running turn: how long it has run
	}
	r := rowModel{title: oneLine(t.Title), id: t.ID, who: assigneeLabel(t), elapsed: shortDuration(now.Sub(since))}
	switch {
	case isRunning(t):
		r.glyph, r.glyphKind = spinnerFrames[frame%len(spinnerFrames)], glyphSpin
	default:
		r.glyph, r.glyphKind = stageGlyph(core.StageOf(t))
	}
	if t.Autopilot {
		r.badges = append(r.badges, badgeAuto)
	}
	if q := t.PendingQuestion; q != nil && q.Status == core.QuestionPending {
		if q.Kind == core.QuestionParent {
			r.badges = append(r.badges, badgeAskParent)
		} else {
			r.badges = append(r.badges, badgeAskYou)
		}
	}
	// A finished task's last run may have failed; it no longer matters.
	if t.Session != nil && t.Session.State == core.SessionFailed && !t.Status.Terminal() {
		r.badges = append(r.badges, badgeFailed)
	}
	if t.Halted {
		r.badges = append(r.badges, badgeStopped)
	}
	if t.Interrupted {
		r.badges = append(r.badges, badgeInterrupted)
	}
	if t.Stuck() {
		r.badges = append(r.badges, badgeStuck)
	} else if t.OverBudget() {
		r.badges = append(r.badges, badgeBudget)
	} else if t.Escalated() {
		r.badges = append(r.badges, badgeEscalated)
	}
	r.cost = rowCost(t)
	if t.Waiting != "" {
		r.badges = append(r.badges, badgeWaiting)
	}
	if len(t.BlockedBy) > 0 {
		r.badges = append(r.badges, badgeBlocked)
	}
	return r
}

// rowCost is a row's spend: the subtree's on a task whose children spent
// too, else its own; "" when no cost was reported.
func rowCost(t *core.Task) string {
	u := t.Usage
	if u == nil {
		return ""
	}
	if tree := u.Tree.CostText(); tree != "" && (tree != u.Own.CostText() || u.Tree.Tokens != u.Own.Tokens) {
		return "Σ" + tree
	}
	return u.Own.CostText()
}

// assigneeLabel names who holds the task, short: "@you" for the
// operator, "@name" for another person, "^id" for the task that delegated
// it (it waits there for sign-off), the role's name when it is not just
// the profile's own role, else the profile.
func assigneeLabel(t *core.Task) string {
	a := t.Assignee
	switch {
	case a == nil:
		return t.Profile
	case a.IsOperator():
		return "@you"
	case a.IsPerson():
		return "@" + a.Name
	case a.IsTask():
		return "^" + a.Name
	case a.Name == t.Profile || a.Name == "":
		return t.Profile
	}
	return a.Name
}

// stageGlyph is a stage's mark (core.Stage.Glyph, as the CLI prints it)
// and its style: the tree, the detail pane and the zoomed header show a
// task by its stage (ADR 0070); a task back with you after its agent ran
// is styled as one to review.
func stageGlyph(s core.Stage) (string, glyphKind) {
	kind := glyphTodo
	switch s {
	case core.StageInProgress:
		kind = glyphBusy
	case core.StageBack, core.StageReview:
		kind = glyphReview
	case core.StageDone:
		kind = glyphDone
	case core.StageCancelled:
		kind = glyphFail
	}
	return s.Glyph(), kind
}

// statusGlyph is a stored status's mark, for the status dialog, which
// moves the status itself.
func statusGlyph(s core.Status) (string, glyphKind) {
	switch s {
	case core.StatusTodo:
		return "○", glyphTodo
	case core.StatusInProgress:
		return "●", glyphBusy
	case core.StatusReview:
		return "◐", glyphReview
	case core.StatusDone:
		return "✓", glyphDone
	case core.StatusCancelled:
		return "✗", glyphFail
	}
	return "?", glyphTodo
}

func (k glyphKind) style(st styles) lipgloss.Style {
	switch k {
	case glyphBusy:
		return st.glyphBusy
	case glyphSpin:
		return st.spinner
	case glyphReview:
		return st.glyphRev
	case glyphDone:
		return st.glyphDone
	case glyphFail:
		return st.glyphFail
	}
	return st.glyphTodo
}

// lastChange is when the task last changed state: its own update or its
// session's, whichever is later.
func lastChange(t *core.Task) time.Time {
	at := t.UpdatedAt
	if t.Session != nil && t.Session.UpdatedAt.After(at) {
		at = t.Session.UpdatedAt
	}
	return at
}

// shortDuration is a compact age: 42s, 7m, 3h, 12d.
func shortDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + "d"
}

// Column widths of a row's right side.
const (
	idCol      = 6
	elapsedCol = 4
	minTitle   = 8
)

// render lays the row out in w cells:
//
//	> ├─● Title that may be cut…  AUTO ?you     k3f9qa mock      12m
//
// The title gives way first; then the profile, the age and the id columns
// drop, narrowest screen last. Badges always stay.
// need is the width row r takes whole, its title uncut and every column
// shown, in a tree narrower than 110 cells (the narrow who column).
func (r rowModel) need(fr flatRow) int {
	n := 2 + width(fr.prefix) + width(r.glyph) + 1 + width(r.title)
	if fr.folded {
		n += width(fmt.Sprintf(" [+%d]", fr.kids))
	}
	for _, b := range r.badges {
		n += 1 + width(badgeText[b])
	}
	if r.cost != "" {
		n += 1 + width(r.cost)
	}
	return n + 1 + idCol + 1 + 8 + 1 + elapsedCol
}

func (r rowModel) render(st styles, fr flatRow, w int, selected, focused bool) string {
	marker := "  "
	if selected {
		marker = "> "
	}
	fold := ""
	if fr.folded {
		fold = fmt.Sprintf(" [+%d]", fr.kids)
	}
	badgeW := 0
	for _, b := range r.badges {
		badgeW += 1 + width(badgeText[b])
	}
	if r.cost != "" {
		badgeW += 1 + width(r.cost)
	}
	whoCol := 8
	if w >= 110 {
		whoCol = 12
	}
	showWho, showAge, showID := true, true, true
	right := func() int {
		n := 0
		if showID {
			n += 1 + idCol
		}
		if showWho {
			n += 1 + whoCol
		}
		if showAge {
			n += 1 + elapsedCol
		}
		return n
	}
	prefix := fr.prefix
	if max3 := w / 3; width(prefix) > max3 {
		// A very deep task: keep the branches nearest to it.
		r := []rune(prefix)
		prefix = "…" + string(r[len(r)-max3+1:])
	}
	left := width(marker) + width(prefix) + 2
	titleW := w - left - badgeW - width(fold) - right()
	for _, drop := range []*bool{&showWho, &showAge, &showID} {
		if titleW >= minTitle {
			break
		}
		*drop = false
		titleW = w - left - badgeW - width(fold) - right()
	}
	title := truncate(r.title, max(titleW, 1))
	pad := max(0, titleW-width(title))

	plain := !selected && !fr.context
	var b strings.Builder
	b.Grow(w + 64)
	b.WriteString(marker)
	b.WriteString(prefix)
	if plain {
		b.WriteString(r.glyphKind.style(st).Render(r.glyph))
	} else {
		b.WriteString(r.glyph)
	}
	b.WriteByte(' ')
	b.WriteString(title)
	b.WriteString(fold)
	for _, k := range r.badges {
		b.WriteByte(' ')
		if plain {
			b.WriteString(k.style(st).Render(badgeText[k]))
		} else {
			b.WriteString(badgeText[k])
		}
	}
	if r.cost != "" {
		b.WriteByte(' ')
		b.WriteString(r.cost)
	}
	b.WriteString(strings.Repeat(" ", pad))
	col := func(s string, style lipgloss.Style) {
		b.WriteByte(' ')
		if plain {
			b.WriteString(style.Render(s))
		} else {
			b.WriteString(s)
		}
	}
	if showID {
		col(fit(r.id, idCol), st.id)
	}
	if showWho {
		col(fit(r.who, whoCol), st.who)
	}
	if showAge {
		col(padLeft(r.elapsed, elapsedCol), st.elapsed)
	}
	line := b.String()
	if gap := w - width(line); gap > 0 {
		line += strings.Repeat(" ", gap)
	} else if gap < 0 {
		line = truncate(line, w)
	}
	switch {
	case selected && focused:
		return st.selected.Render(line)
	case selected:
		return st.unfocused.Render(line)
	case fr.context:
		return st.context.Render(line)
	}
	return line
}

// describeAssignee says who an assignee is: "you", "role mock", "person
// alice", "task k3f9qa".
func describeAssignee(a core.Ref) string {
	if a.IsOperator() {
		return "you"
	}
	if a.Kind == "" {
		return a.Name
	}
	return a.Describe()
}
