package tui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textarea"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// diffView shows what the selected task changed in its worktree (the
// task's branch and uncommitted work against its base): the files, then
// the hunks, scrolled as one text. It takes the whole body of the screen,
// not a box: a diff needs the width. The patch is read once, when the view
// opens (v again reads it afresh).
//
// A cursor marks one line (◂ at its end); c writes a comment on it, or on
// the range V marked, shown under its last line; c on a commented line
// edits the comment, x removes it, s sends all of them as one review. The
// comments the task already keeps are shown in place too, open or
// outdated.
type diffView struct {
	base
	taskID string
	title  string
	diff   *api.TaskDiff
	lines  []diffLine // the patch, laid out
	files  []int      // the first line of each file in lines
	names  []string   // each file's path, as its header says
	top    int        // the first patch line shown
	cur    int        // the file the list marks: the cursor's
	sel    int        // the cursor's line in lines
	anchor int        // the other end of a marked range, -1 without one

	drafts  []draftComment // written here, not sent yet
	editing bool
	edit    draftComment // the comment being written
	editIdx int          // its index in drafts, -1 for a new one
	input   textarea.Model
	note    string // what the last key did, shown in place of the summary
	noteErr bool
	closing bool // a close with drafts unsent was asked once
}

// draftComment is a comment written in the view: File's new lines
// Line..End.
type draftComment struct {
	File      string
	Line, End int
	Text      string
}

// diffLine is one line of the patch and how it is drawn; file and line
// place it in the new file (line 0: a removed line, or not a file's line).
type diffLine struct {
	text string
	kind diffKind
	file string
	line int
}

type diffKind int

const (
	diffContext diffKind = iota
	diffFile             // a file's header
	diffMeta             // mode changes, renames, "\ No newline"
	diffHunk             // @@ … @@
	diffAdded
	diffRemoved
)

func newDiffView(id int, t *core.Task) *diffView {
	return &diffView{base: base{id: id, busy: true}, taskID: t.ID, title: oneLine(t.Title), anchor: -1}
}

// loaded takes the task's diff, or the engine's refusal (a task in a
// shared directory has no diff).
func (d *diffView) loaded(msg diffMsg) {
	if msg.err != nil {
		d.failed(msg.err)
		return
	}
	d.busy, d.err = false, ""
	diff := msg.diff
	d.diff = &diff
	d.lines, d.files, d.names = parsePatch(diff.Patch)
	d.top, d.cur, d.sel, d.anchor = 0, 0, 0, -1
}

// failed keeps the diff on screen when a review is refused: the refusal
// is the note, the comments stay to be fixed.
func (d *diffView) failed(err error) {
	if d.diff == nil {
		d.base.failed(err)
		return
	}
	d.busy = false
	d.note, d.noteErr = errorText(err), true
}

// succeeded takes a sent review: its comments are now the task's, shown
// as kept; the view stays open.
func (d *diffView) succeeded(msg opDoneMsg) bool {
	if msg.op != opReview || d.diff == nil {
		return false
	}
	d.busy = false
	for _, c := range d.drafts {
		d.diff.Comments = append(d.diff.Comments, api.ReviewComment{TaskID: d.taskID, Author: core.ByRef(core.OperatorRef()),
			File: c.File, Line: c.Line, EndLine: c.End, Text: c.Text, State: api.ReviewOpen})
	}
	d.drafts = nil
	d.note, d.noteErr = msg.text, false
	return true
}

// parsePatch lays out a unified diff: each file starts with one header
// line (its path); git's index and ---/+++ lines are dropped, the rest
// keep their +/-/space prefix so they read without colour.
func parsePatch(patch string) (lines []diffLine, files []int, names []string) {
	inHeader := false
	file, next := "", 0 // the file and the new line the next + or context line is
	for _, raw := range strings.Split(strings.TrimRight(patch, "\n"), "\n") {
		l := sanitize(raw)
		if strings.HasPrefix(raw, "@@") {
			next = hunkStart(raw)
		}
		n := len(lines)
		switch {
		case raw == "" && len(lines) == 0:
			continue
		case strings.HasPrefix(raw, "diff --git "):
			inHeader = true
			name := l
			if i := strings.LastIndex(l, " b/"); i >= 0 {
				name = l[i+3:]
			}
			files = append(files, len(lines))
			names = append(names, name)
			file, next = name, 0
			lines = append(lines, diffLine{text: name, kind: diffFile})
		case inHeader && strings.HasPrefix(raw, "@@"):
			inHeader = false
			lines = append(lines, diffLine{text: l, kind: diffHunk})
		case inHeader:
			if strings.HasPrefix(raw, "index ") || strings.HasPrefix(raw, "--- ") || strings.HasPrefix(raw, "+++ ") {
				continue
			}
			lines = append(lines, diffLine{text: l, kind: diffMeta})
		case strings.HasPrefix(raw, "@@"):
			lines = append(lines, diffLine{text: l, kind: diffHunk})
		case strings.HasPrefix(raw, "+"):
			lines = append(lines, diffLine{text: l, kind: diffAdded})
		case strings.HasPrefix(raw, "-"):
			lines = append(lines, diffLine{text: l, kind: diffRemoved})
		case strings.HasPrefix(raw, `\`):
			lines = append(lines, diffLine{text: l, kind: diffMeta})
		default:
			lines = append(lines, diffLine{text: l, kind: diffContext})
		}
		if len(lines) > n && next > 0 && (lines[n].kind == diffAdded || lines[n].kind == diffContext) {
			lines[n].file, lines[n].line = file, next
			next++
		}
	}
	return lines, files, names
}

// hunkStart reads the new side's first line from "@@ -a,b +c,d @@" (0 if
// it is not there).
func hunkStart(h string) int {
	i := strings.Index(h, " +")
	if i < 0 {
		return 0
	}
	rest := h[i+2:]
	if j := strings.IndexAny(rest, ", "); j >= 0 {
		rest = rest[:j]
	}
	n, _ := strconv.Atoi(rest)
	return n
}

// changeSummary is "+12 −3 in 4 files".
func changeSummary(d api.TaskDiff) string {
	n := len(d.Files)
	if n == 0 {
		return "no changes"
	}
	files := "files"
	if n == 1 {
		files = "file"
	}
	return fmt.Sprintf("+%d −%d in %d %s", d.Added, d.Deleted, n, files)
}

// fileAt is the file whose lines are at the top of the view.
func (d *diffView) fileAt(top int) int {
	cur := 0
	for i, s := range d.files {
		if s <= top {
			cur = i
		}
	}
	return cur
}

// layoutRows splits the body's h rows: the header (title and summary),
// the file list, a rule, and the patch.
func (d *diffView) layoutRows(h int) (list, patch int) {
	list = 0
	if d.diff != nil {
		list = min(len(d.diff.Files), max(1, (h-4)/4))
	}
	patch = h - 3 - list
	if d.editing {
		patch -= editRows + 1
	}
	return list, max(1, patch)
}

// editRows is the height of the comment box.
const editRows = 3

// scrollTo shows the patch from line top, the cursor on it; the list
// then marks the file there.
func (d *diffView) scrollTo(top, h int) {
	_, ph := d.layoutRows(h)
	d.top = clamp(top, 0, max(0, len(d.lines)-ph))
	d.sel = clamp(top, 0, max(0, len(d.lines)-1))
	d.follow(h)
}

// moveTo puts the cursor on line i and scrolls as little as shows it.
func (d *diffView) moveTo(i, h int) {
	d.sel = clamp(i, 0, max(0, len(d.lines)-1))
	d.follow(h)
}

// follow scrolls so that the cursor's line is on screen, counting the
// comment rows drawn under lines.
func (d *diffView) follow(h int) {
	_, ph := d.layoutRows(h)
	if d.sel < d.top {
		d.top = d.sel
	}
	for d.top < d.sel && d.rowsBetween(d.top, d.sel) > ph {
		d.top++
	}
	d.cur = d.fileAt(d.sel)
}

// rowsBetween counts the rows lines from..to take, with their comments
// (the last line's own comments not counted: the cursor is on the line).
func (d *diffView) rowsBetween(from, to int) int {
	n := 0
	for i := from; i <= to && i < len(d.lines); i++ {
		n++
		if i < to {
			n += len(d.commentsAt(i))
		}
	}
	return n
}

// lastShown is the number (from 1) of the last patch line ph rows show
// from top, with the comment rows under lines.
func (d *diffView) lastShown(top, ph int) int {
	rows, i := 0, top
	for ; i < len(d.lines) && rows < ph; i++ {
		rows += 1 + len(d.commentsAt(i))
	}
	return i
}

// toFile shows file i from its header (as near the top as the end of the
// patch allows) and marks it.
func (d *diffView) toFile(i, h int) {
	if i < 0 || i >= len(d.files) {
		return
	}
	d.scrollTo(d.files[i], h)
	d.sel = d.files[i]
	d.cur = i
}

// shownComment is a comment drawn under the last line it points at.
type shownComment struct {
	draft bool
	state string
	place string
	text  string
}

// commentsAt lists the comments drawn under line i: the task's kept ones,
// then the drafts.
func (d *diffView) commentsAt(i int) []shownComment {
	l := d.lines[i]
	if l.line == 0 || d.diff == nil {
		return nil
	}
	var out []shownComment
	for _, c := range d.diff.Comments {
		if c.File == l.file && max(c.EndLine, c.Line) == l.line {
			out = append(out, shownComment{state: c.State, place: placeText(c.Line, c.EndLine), text: c.Text})
		}
	}
	for _, c := range d.drafts {
		if c.File == l.file && c.End == l.line {
			out = append(out, shownComment{draft: true, place: placeText(c.Line, c.End), text: c.Text})
		}
	}
	return out
}

func placeText(line, end int) string {
	if end > line {
		return fmt.Sprintf("%d-%d", line, end)
	}
	return strconv.Itoa(line)
}

// selection is the cursor's line, or the range V marked.
func (d *diffView) selection() (from, to int) {
	from, to = d.sel, d.sel
	if d.anchor >= 0 {
		from, to = min(d.anchor, d.sel), max(d.anchor, d.sel)
	}
	return from, to
}

// draftAt is the draft covering the cursor's line, -1 if none.
func (d *diffView) draftAt() int {
	l := d.lines[d.sel]
	for i, c := range d.drafts {
		if l.line > 0 && c.File == l.file && c.Line <= l.line && l.line <= c.End {
			return i
		}
	}
	return -1
}

// startComment opens the comment box on the selection (or on the draft
// the cursor is on, to edit it).
func (d *diffView) startComment(ui dialogUI) {
	d.note, d.noteErr = "", false
	if i := d.draftAt(); i >= 0 && d.anchor < 0 {
		d.edit, d.editIdx = d.drafts[i], i
	} else {
		from, to := d.selection()
		first, last := -1, -1
		for i := from; i <= to; i++ {
			if d.lines[i].line > 0 {
				if first < 0 {
					first = i
				}
				last = i
			}
		}
		switch {
		case first < 0:
			d.note, d.noteErr = "no line of the changed file here: comment on an added (+) or unchanged line", true
			return
		case d.lines[first].file != d.lines[last].file:
			d.note, d.noteErr = "a range stays within one file", true
			return
		}
		d.edit = draftComment{File: d.lines[first].file, Line: d.lines[first].line, End: d.lines[last].line}
		d.editIdx = -1
	}
	d.anchor = -1
	d.input = newTextArea(ui.st, "your comment", ui.keys.Newline)
	d.input.SetWidth(max(10, ui.width-2))
	d.input.SetHeight(editRows)
	d.input.SetValue(d.edit.Text)
	d.input.Focus()
	d.editing = true
	d.follow(ui.body)
}

// saveComment keeps the comment written in the box; an empty one removes
// the draft it edited.
func (d *diffView) saveComment() {
	d.editing = false
	d.edit.Text = strings.TrimSpace(d.input.Value())
	switch {
	case d.edit.Text == "" && d.editIdx >= 0:
		d.drafts = append(d.drafts[:d.editIdx], d.drafts[d.editIdx+1:]...)
	case d.edit.Text == "":
	case d.editIdx >= 0:
		d.drafts[d.editIdx] = d.edit
	default:
		d.drafts = append(d.drafts, d.edit)
	}
}

// review is the drafts as one review.
func (d *diffView) review() api.MessageInput {
	in := api.MessageInput{Delivery: api.DeliveryQueued}
	for _, c := range d.drafts {
		in.Comments = append(in.Comments, api.ReviewCommentInput{File: c.File, Line: c.Line, EndLine: c.End, Text: c.Text})
	}
	return in
}

func (d *diffView) update(ui dialogUI, msg tea.KeyMsg) (action, tea.Cmd) {
	k := ui.keys
	h := ui.body
	if d.editing {
		switch {
		case key.Matches(msg, k.Cancel):
			d.editing = false
		case key.Matches(msg, k.Submit):
			d.saveComment()
			d.follow(h)
		default:
			var cmd tea.Cmd
			d.input, cmd = d.input.Update(msg)
			return nil, cmd
		}
		return nil, nil
	}
	if d.busy && d.diff != nil {
		return nil, nil // a review on its way
	}
	_, page := d.layoutRows(h)
	closing := d.closing
	d.closing = false
	switch {
	case key.Matches(msg, k.Cancel) && d.anchor >= 0:
		d.anchor = -1
	case key.Matches(msg, k.CloseDiff):
		if len(d.drafts) > 0 && !closing {
			d.closing = true
			d.note, d.noteErr = fmt.Sprintf("%d comments not sent: s sends them; %s again drops them", len(d.drafts), msg.String()), true
			return nil, nil
		}
		return closeDialog{}, nil
	case key.Matches(msg, k.Merge):
		return openFinish{op: opMerge, taskID: d.taskID, diff: d.diff, back: d}, nil
	case key.Matches(msg, k.Discard):
		return openFinish{op: opDiscard, taskID: d.taskID, diff: d.diff, back: d}, nil
	case d.diff == nil || len(d.lines) == 0:
		return nil, nil
	case key.Matches(msg, k.Comment):
		d.startComment(ui)
		return nil, textarea.Blink
	case key.Matches(msg, k.Uncomment):
		if i := d.draftAt(); i >= 0 {
			d.drafts = append(d.drafts[:i], d.drafts[i+1:]...)
			d.note, d.noteErr = "comment removed", false
		} else {
			d.note, d.noteErr = "no comment of yours on this line (kept ones stay with the task)", true
		}
	case key.Matches(msg, k.MarkRange):
		if d.anchor >= 0 {
			d.anchor = -1
		} else {
			d.anchor = d.sel
			d.note, d.noteErr = "range: move to its other end, then c", false
		}
	case key.Matches(msg, k.SendReview):
		if len(d.drafts) == 0 {
			d.note, d.noteErr = "no comments to send: c writes one on the line", true
			return nil, nil
		}
		d.busy, d.note, d.noteErr = true, "sending the review…", false
		return reviewTask{taskID: d.taskID, in: d.review()}, nil
	case key.Matches(msg, k.Up):
		d.moveTo(d.sel-1, h)
	case key.Matches(msg, k.Down):
		d.moveTo(d.sel+1, h)
	case key.Matches(msg, k.PageUp):
		d.scrollTo(d.top-max(1, page-1), h)
	case key.Matches(msg, k.PageDown), msg.Type == tea.KeySpace:
		d.scrollTo(d.top+max(1, page-1), h)
	case key.Matches(msg, k.Top):
		d.scrollTo(0, h)
	case key.Matches(msg, k.Bottom):
		d.scrollTo(len(d.lines), h)
		d.moveTo(len(d.lines)-1, h)
	case key.Matches(msg, k.NextFile):
		d.toFile(d.cur+1, h)
	case key.Matches(msg, k.PrevFile):
		d.toFile(d.cur-1, h)
	}
	return nil, nil
}

// view is for the interface; the model draws a diffView with fullView.
func (d *diffView) view(ui dialogUI, w int) string {
	return strings.Join(d.fullView(ui, w, ui.body), "\n")
}

// fullView draws the view in w×h cells.
func (d *diffView) fullView(ui dialogUI, w, h int) []string {
	st := ui.st
	out := make([]string, 0, h)
	add := func(s string) { out = append(out, s) }
	head := "Diff of task " + d.taskID
	if d.diff != nil && d.diff.Branch != "" {
		head += " · " + d.diff.Branch
	}
	add(st.boxTitle.Render(truncate(head+" · "+d.title, w)))
	switch {
	case d.busy:
		add(st.dim.Render("reading the diff…"))
	case d.err != "":
		for _, l := range wrap(st.errText.Render("✗ ")+d.err, w) {
			add(l)
		}
	case d.diff != nil:
		sum := changeSummary(*d.diff)
		if d.diff.Base != "" {
			sum += " · against " + shortCommit(d.diff.Base)
		}
		if d.diff.Truncated {
			sum += fmt.Sprintf(" · cut at %d MiB, the rest is in %s", api.MaxPatch>>20, d.diff.Dir)
		}
		switch {
		case d.note != "" && d.noteErr:
			add(truncate(st.errText.Render("✗ ")+d.note, w))
		case d.note != "":
			add(st.dim.Render(truncate(d.note, w)))
		default:
			if n := len(d.drafts); n > 0 {
				sum += fmt.Sprintf(" · %d to send (s)", n)
			}
			add(st.dim.Render(truncate(sum, w)))
		}
		list, ph := d.layoutRows(h)
		top := clamp(d.top, 0, max(0, len(d.lines)-ph)) // the screen may have shrunk
		cur := d.cur
		first := clamp(cur-list/2, 0, max(0, len(d.diff.Files)-list))
		for i := first; i < first+list && i < len(d.diff.Files); i++ {
			f := d.diff.Files[i]
			counts := fmt.Sprintf("+%d −%d", f.Added, f.Deleted)
			if f.Added < 0 {
				counts = "binary"
			}
			mark := "  "
			if i == cur && len(d.files) > 0 {
				mark = st.fieldFocus.Render("> ")
			}
			more := ""
			if i == first+list-1 && i < len(d.diff.Files)-1 {
				more = fmt.Sprintf(" (+%d more)", len(d.diff.Files)-1-i)
			}
			right := counts + more
			add(mark + fit(oneLine(f.Path), max(1, w-3-width(right))) + " " + st.dim.Render(right))
		}
		rule := "── "
		if len(d.lines) > ph {
			rule += fmt.Sprintf("lines %d-%d of %d ", top+1, d.lastShown(top, ph), len(d.lines))
		}
		add(st.divider.Render(truncate(rule+strings.Repeat("─", max(0, w-width(rule))), w)))
		if len(d.diff.Files) == 0 {
			add(st.dim.Render("No changes since its branch started."))
		}
		from, to := d.selection()
		rows := 0
		for i := top; i < len(d.lines) && rows < ph; i++ {
			if i >= from && i <= to {
				add(fit(renderDiffLine(st, d.lines[i], w-2), w-2) + " " + st.fieldFocus.Render("◂"))
			} else {
				add(renderDiffLine(st, d.lines[i], w))
			}
			rows++
			for _, c := range d.commentsAt(i) {
				if rows >= ph {
					break
				}
				add(renderComment(st, c, w))
				rows++
			}
		}
		if d.editing {
			for len(out) < h-editRows-1 {
				add("")
			}
			add(st.boxTitle.Render(truncate(fmt.Sprintf("comment on %s:%s · enter save · esc cancel", d.edit.File, placeText(d.edit.Line, d.edit.End)), w)))
			for _, row := range strings.Split(d.input.View(), "\n") {
				add(truncate(row, w))
			}
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
	return out[:h]
}

func renderDiffLine(st styles, l diffLine, w int) string {
	text := truncate(l.text, w)
	switch l.kind {
	case diffFile:
		return st.diffFile.Render(truncate("▸ "+l.text, w))
	case diffMeta:
		return st.dim.Render(text)
	case diffHunk:
		return st.diffHunk.Render(text)
	case diffAdded:
		return st.diffAdd.Render(text)
	case diffRemoved:
		return st.diffDel.Render(text)
	}
	return text
}

// renderComment is one row under the line a comment points at: a draft
// (✎, to send) or one the task keeps (● open, ○ outdated).
func renderComment(st styles, c shownComment, w int) string {
	switch {
	case c.draft:
		return st.fieldFocus.Render(truncate("  ✎ "+c.place+": "+oneLine(c.text), w))
	case c.state == api.ReviewOutdated:
		return st.dim.Render(truncate("  ○ outdated "+c.place+": "+oneLine(c.text), w))
	}
	return st.dim.Render(truncate("  ● "+c.place+": "+oneLine(c.text), w))
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

func (d *diffView) help(k keyMap) []key.Binding {
	if d.editing {
		return []key.Binding{relabel(k.Submit, "save"), relabel(k.Newline, "new line"), relabel(k.Cancel, "cancel")}
	}
	// At 80 columns the bar keeps what it can from the front: commenting,
	// the file keys and the two verbs, shortened, before scrolling.
	return []key.Binding{relabel(k.Comment, "comment"), relabel(k.SendReview, "send"), relabel(k.NextFile, "file"),
		relabel(k.Merge, "merge"), relabel(k.Discard, "discard"), relabel(k.MarkRange, "range"), relabel(k.Uncomment, "remove"),
		k.Scroll, k.PrevFile, k.CloseDiff}
}
