package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// finishDialog asks before a task's work is merged into the main checkout
// (M) or its worktree and branch are deleted (D). It says exactly what
// will happen: the branch, where it goes, the files it changed; for a
// discard, that the work is lost. It needs the task's change stat, which
// the diff view passes on or which is read when the dialog opens; until
// then (or when the read is refused) it confirms nothing.
//
// The merge's commit message is an input filled with the default the UI
// sends (git's own for a merge; the task's title for a squash, rather
// than git's list of squashed commits): what is shown is what is
// committed.
type finishDialog struct {
	base
	op      opKind // opMerge or opDiscard
	taskID  string
	title   string
	ws      core.Workspace
	loading bool
	statErr string
	diff    *api.TaskDiff
	squash  bool
	msg     textinput.Model
	edited  bool   // the operator typed a message of their own
	back    dialog // the diff view it came from, shown again on cancel
	// after is set once the merge or discard went through: the dialog
	// then offers to finish the task (issue 22: finished work never left
	// "your turn"): done and archived after a merge, cancelled after a
	// discard.
	after *finishAfter
}

// finishAfter is what a dialog whose merge or discard went through
// offers next.
type finishAfter struct {
	result string      // what the merge or discard did
	task   core.Task   // the task as the merge or discard left it
	to     core.Status // done after a merge, cancelled after a discard
}

// succeeded takes the merge's or discard's outcome and keeps the dialog
// open to offer the next step, unless there is none to offer.
func (d *finishDialog) succeeded(msg opDoneMsg) bool {
	if d.after != nil || msg.task == nil {
		return false
	}
	t := *msg.task
	to := core.StatusDone
	if d.op == opDiscard {
		to = core.StatusCancelled
		if t.Status == to {
			return false
		}
	} else if t.Status == to && t.Archived {
		return false
	}
	d.busy, d.err = false, ""
	d.after = &finishAfter{result: msg.text, task: t, to: to}
	return true
}

// afterAction is the next step the dialog offers.
func (d *finishDialog) afterAction() action {
	a := d.after
	return endTask{taskID: a.task.ID, from: a.task.Status, to: a.to, archive: d.op == opMerge}
}

func (d *finishDialog) afterView(ui dialogUI, w int) string {
	st := ui.st
	a := d.after
	var lines []string
	add := func(s string) { lines = append(lines, wrap(s, w)...) }
	if d.op == opMerge {
		lines = append(lines, st.boxTitle.Render(truncate("Merged task "+d.taskID+"'s branch", w)))
	} else {
		lines = append(lines, st.boxTitle.Render(truncate("Discarded task "+d.taskID+"'s worktree", w)))
	}
	lines = append(lines, truncate(d.title, w))
	add(st.okText.Render("✓ ") + a.result)
	lines = append(lines, "")
	var ask, yes string
	switch {
	case d.op == opDiscard:
		ask = fmt.Sprintf("Cancel task %s too? Its work is gone; cancelled, it leaves your turn and wakes whoever waits on it.", d.taskID)
		yes = "cancel it"
	case a.task.Status == core.StatusDone:
		ask = fmt.Sprintf("Archive task %s too? It is done; kandev task list --all still shows it.", d.taskID)
		yes = "archive it"
	default:
		ask = fmt.Sprintf("Mark task %s done and archive it? Its work is merged; archived, its worktree is removed and kandev task list --all still shows it.", d.taskID)
		yes = "done and archive"
	}
	add(ask)
	lines = append(lines, "", st.helpKey.Render("y/enter")+" "+yes+"   "+st.helpKey.Render("n/esc")+" leave it as it is")
	if f := d.footer(st, w); f != "" {
		lines = append(lines, "", f)
	}
	return strings.Join(lines, "\n")
}

func newFinishDialog(ui dialogUI, id int, op opKind, t *core.Task, diff *api.TaskDiff, back dialog) *finishDialog {
	d := &finishDialog{base: base{id: id}, op: op, taskID: t.ID, title: oneLine(t.Title), back: back}
	if t.Workspace != nil {
		d.ws = *t.Workspace
	}
	if diff != nil {
		d.loaded(diffMsg{dialog: id, diff: *diff})
	} else {
		d.loading = true
	}
	if op == opMerge {
		d.msg = newInput(ui.st, "git's default message", max(10, ui.width-9))
		d.msg.SetValue(d.defaultMessage())
		d.msg.Focus()
	}
	return d
}

// loaded takes the task's change stat, or the engine's refusal (a shared
// directory, a discarded worktree).
func (d *finishDialog) loaded(msg diffMsg) {
	d.loading = false
	if msg.err != nil {
		d.statErr = errorText(msg.err)
		return
	}
	diff := msg.diff
	d.diff, d.statErr = &diff, ""
	if diff.Branch != "" {
		d.ws.Branch = diff.Branch
	}
	if diff.Dir != "" {
		d.ws.Dir = diff.Dir
	}
	if d.op == opMerge && !d.edited {
		d.msg.SetValue(d.defaultMessage())
	}
}

func (d *finishDialog) defaultMessage() string {
	if d.squash {
		return fmt.Sprintf("%s (kandev task %s)", d.title, d.taskID)
	}
	return fmt.Sprintf("Merge branch '%s'", d.ws.Branch)
}

func (d *finishDialog) cancel() action {
	if d.back != nil {
		return backTo{d: d.back}
	}
	return closeDialog{}
}

// ready: the stat is read, so the dialog says what will happen.
func (d *finishDialog) ready() bool { return !d.loading && d.diff != nil && !d.busy }

func (d *finishDialog) update(ui dialogUI, msg tea.KeyMsg) (action, tea.Cmd) {
	k := ui.keys
	if d.after != nil {
		switch {
		case d.busy:
		case key.Matches(msg, k.Yes), key.Matches(msg, k.Submit):
			d.busy, d.err = true, ""
			return d.afterAction(), nil
		case key.Matches(msg, k.No):
			return closeDialog{}, nil
		}
		return nil, nil
	}
	if msg.Type == tea.KeyEsc {
		if d.busy {
			return nil, nil
		}
		return d.cancel(), nil
	}
	if d.op == opDiscard {
		switch {
		case d.busy:
		case key.Matches(msg, k.No):
			return d.cancel(), nil
		case !d.ready():
		case key.Matches(msg, k.Yes), d.err == "" && key.Matches(msg, k.Submit):
			d.busy, d.err = true, ""
			return discardTask{taskID: d.taskID}, nil
		}
		return nil, nil
	}
	switch {
	case d.busy:
		return nil, nil
	case key.Matches(msg, k.MergeHow):
		d.squash = !d.squash
		if !d.edited {
			d.msg.SetValue(d.defaultMessage())
			d.msg.CursorEnd()
		}
		return nil, nil
	case key.Matches(msg, k.Submit):
		if !d.ready() {
			return nil, nil
		}
		d.busy, d.err = true, ""
		return mergeTask{taskID: d.taskID, in: api.MergeInput{Squash: d.squash, Message: strings.TrimSpace(d.msg.Value())}}, nil
	}
	before := d.msg.Value()
	var cmd tea.Cmd
	d.msg, cmd = d.msg.Update(msg)
	if d.msg.Value() != before {
		d.edited = true
	}
	return nil, cmd
}

// maxFinishFiles is how many changed files the confirmation lists; the
// rest are counted.
const maxFinishFiles = 5

func (d *finishDialog) view(ui dialogUI, w int) string {
	if d.after != nil {
		return d.afterView(ui, w)
	}
	st := ui.st
	var lines []string
	add := func(s string) { lines = append(lines, wrap(s, w)...) }
	branch := d.ws.Branch
	if branch == "" {
		branch = "(none)"
	}
	if d.op == opMerge {
		lines = append(lines, st.boxTitle.Render(truncate("Merge task "+d.taskID+"'s branch?", w)))
	} else {
		lines = append(lines, st.boxTitle.Render(truncate("Discard task "+d.taskID+"'s worktree and branch?", w)))
	}
	lines = append(lines, truncate(d.title, w))
	switch {
	case d.loading:
		lines = append(lines, st.dim.Render("reading its changes…"))
	case d.statErr != "":
		lines = append(lines, wrap(st.errText.Render("✗ ")+d.statErr, w)...)
		lines = append(lines, "", st.helpKey.Render("esc")+" close")
		return strings.Join(lines, "\n")
	}
	changes := "its changes"
	if d.diff != nil {
		changes = changeSummary(*d.diff)
		if d.diff.Base != "" {
			changes += " since " + shortCommit(d.diff.Base)
		}
	}
	repo := d.ws.Repo
	if repo == "" {
		repo = "the repository"
	}
	field := func(label, value string) { add(st.dim.Render(fmt.Sprintf("%-9s", label)) + value) }
	if d.op == opMerge {
		field("branch", branch)
		into := "the branch checked out in " + repo
		if d.diff != nil && d.diff.Into != "" {
			into = d.diff.Into + " (checked out in " + repo + ")"
		}
		field("into", into)
	} else {
		if d.ws.Mode == core.WorkspaceRetired {
			field("worktree", "none: removed when the task was archived done")
		} else {
			field("worktree", d.ws.Dir)
		}
		field("branch", branch)
	}
	field("changes", changes)
	var explain, tail []string
	if d.op == opMerge {
		explain = wrap("Uncommitted work in its worktree is committed on its branch first. If the main checkout has uncommitted changes or the merge would conflict, nothing changes and kandev says what to do. A merge fast-forwards when that branch has not moved (no merge commit, no message); a squash makes one commit.", w)
		tail = append(tail, "",
			"How     "+checkbox(!d.squash)+" merge commit   "+checkbox(d.squash)+" squash into one commit",
			"Message "+d.msg.View(),
			"", st.helpKey.Render("enter")+" merge   "+st.helpKey.Render("tab")+" merge/squash   "+st.helpKey.Render("esc")+" cancel")
	} else {
		// What a discard loses is the point of asking: it is never cut.
		gone := "Both are deleted."
		if d.ws.Mode == core.WorkspaceRetired {
			gone = "The branch is deleted."
		}
		tail = append(wrap(gone+" Work on the branch that was not merged is lost: kandev keeps no copy. The task stays; its workspace shows as discarded.", w),
			"", st.helpKey.Render("y")+" discard   "+st.helpKey.Render("n/esc")+" cancel")
	}
	if f := d.footer(st, w); f != "" {
		tail = append(tail, "", f)
		tail = strings.Split(strings.Join(tail, "\n"), "\n") // the footer is wrapped
	}
	// The box must fit the body (80×24 included), or the overlay cuts its
	// end, where the keys and a refusal are: the explanation goes first (a
	// refusal says what matters then), then files from the list.
	budget := ui.body - 2 // the box's borders
	files := d.fileLines(st, w, maxFinishFiles)
	if d.err != "" || len(lines)+len(files)+len(explain)+len(tail) > budget {
		explain = nil
	}
	if room := budget - len(lines) - len(tail); len(files) > room {
		files = d.fileLines(st, w, max(1, room))
	}
	lines = append(lines, files...)
	lines = append(lines, explain...)
	lines = append(lines, tail...)
	return strings.Join(lines, "\n")
}

// fileLines lists the changed files with their line counts, in at most
// limit lines.
func (d *finishDialog) fileLines(st styles, w, limit int) []string {
	if d.diff == nil {
		return nil
	}
	var out []string
	files := d.diff.Files
	for i, f := range files {
		if i == limit-1 && len(files) > limit {
			out = append(out, st.dim.Render(fmt.Sprintf("  … and %d more files", len(files)-i)))
			break
		}
		counts := fmt.Sprintf("+%d −%d", f.Added, f.Deleted)
		if f.Added < 0 {
			counts = "binary"
		}
		out = append(out, "  "+fit(oneLine(f.Path), max(1, w-3-width(counts)))+" "+st.dim.Render(counts))
	}
	return out
}

func (d *finishDialog) help(k keyMap) []key.Binding {
	if d.after != nil {
		return []key.Binding{relabel(k.Yes, "yes"), relabel(k.No, "leave it")}
	}
	if d.op == opMerge {
		return []key.Binding{k.DoMerge, k.MergeHow, relabel(k.Cancel, "cancel")}
	}
	return []key.Binding{k.DoDiscard, k.CancelDialog}
}

// failed shows the engine's refusal. A refusal (not an internal failure)
// changed nothing, which the operator needs to know before trying again;
// the engine's "merge refused" prefix would only repeat the dialog's.
func (d *finishDialog) failed(err error) {
	d.base.failed(err)
	if d.after != nil {
		return // the merge or discard went through; this is the next step's
	}
	switch core.AsError(err).Code {
	case core.CodeConflict, core.CodeValidation, core.CodeNotFound:
		d.err = "nothing changed. " + strings.TrimPrefix(d.err, "merge refused: ")
	}
}
