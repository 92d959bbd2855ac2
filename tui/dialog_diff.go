package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kandev/kandev/core"
)

// diffView shows what the selected task changed in its worktree (the
// task's branch and uncommitted work against its base): the files, then
// the hunks, scrolled as one text. It takes the whole body of the screen,
// not a box: a diff needs the width. The patch is read once, when the view
// opens (v again reads it afresh).
type diffView struct {
	base
	taskID string
	title  string
	diff   *core.TaskDiff
	lines  []diffLine // the patch, laid out
	files  []int      // the first line of each file in lines
	names  []string   // each file's path, as its header says
	top    int        // the first patch line shown
	cur    int        // the file the list marks: tab's, or the one at the top
}

// diffLine is one line of the patch and how it is drawn.
type diffLine struct {
	text string
	kind diffKind
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
	return &diffView{base: base{id: id, busy: true}, taskID: t.ID, title: oneLine(t.Title)}
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
	d.top, d.cur = 0, 0
}

// parsePatch lays out a unified diff: each file starts with one header
// line (its path); git's index and ---/+++ lines are dropped, the rest
// keep their +/-/space prefix so they read without colour.
func parsePatch(patch string) (lines []diffLine, files []int, names []string) {
	inHeader := false
	for _, raw := range strings.Split(strings.TrimRight(patch, "\n"), "\n") {
		l := sanitize(raw)
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
	}
	return lines, files, names
}

// changeSummary is "+12 −3 in 4 files".
func changeSummary(d core.TaskDiff) string {
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
	return list, max(1, h-3-list)
}

// scrollTo shows the patch from line top; the list then marks the file
// there.
func (d *diffView) scrollTo(top, h int) {
	_, ph := d.layoutRows(h)
	d.top = clamp(top, 0, max(0, len(d.lines)-ph))
	d.cur = d.fileAt(d.top)
}

// toFile shows file i from its header (as near the top as the end of the
// patch allows) and marks it.
func (d *diffView) toFile(i, h int) {
	if i < 0 || i >= len(d.files) {
		return
	}
	d.scrollTo(d.files[i], h)
	d.cur = i
}

func (d *diffView) update(ui dialogUI, msg tea.KeyMsg) (action, tea.Cmd) {
	k := ui.keys
	h := ui.body
	_, page := d.layoutRows(h)
	switch {
	case key.Matches(msg, k.CloseDiff):
		return closeDialog{}, nil
	case key.Matches(msg, k.Merge):
		return openFinish{op: opMerge, taskID: d.taskID, diff: d.diff, back: d}, nil
	case key.Matches(msg, k.Discard):
		return openFinish{op: opDiscard, taskID: d.taskID, diff: d.diff, back: d}, nil
	case d.diff == nil:
		return nil, nil
	case key.Matches(msg, k.Up):
		d.scrollTo(d.top-1, h)
	case key.Matches(msg, k.Down):
		d.scrollTo(d.top+1, h)
	case key.Matches(msg, k.PageUp):
		d.scrollTo(d.top-max(1, page-1), h)
	case key.Matches(msg, k.PageDown), msg.Type == tea.KeySpace:
		d.scrollTo(d.top+max(1, page-1), h)
	case key.Matches(msg, k.Top):
		d.scrollTo(0, h)
	case key.Matches(msg, k.Bottom):
		d.scrollTo(len(d.lines), h)
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
			sum += fmt.Sprintf(" · cut at %d MiB, the rest is in %s", core.MaxPatch>>20, d.diff.Dir)
		}
		add(st.dim.Render(truncate(sum, w)))
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
			rule += fmt.Sprintf("lines %d-%d of %d ", top+1, min(len(d.lines), top+ph), len(d.lines))
		}
		add(st.divider.Render(truncate(rule+strings.Repeat("─", max(0, w-width(rule))), w)))
		if len(d.diff.Files) == 0 {
			add(st.dim.Render("No changes since its branch started."))
		}
		for i := top; i < len(d.lines) && i < top+ph; i++ {
			add(renderDiffLine(st, d.lines[i], w))
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

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

func (d *diffView) help(k keyMap) []key.Binding {
	// At 80 columns the bar keeps what it can from the front: the file
	// keys and the two verbs, shortened, before scrolling.
	return []key.Binding{k.NextFile, relabel(k.Merge, "merge"), relabel(k.Discard, "discard"), k.Scroll, k.PrevFile, k.CloseDiff}
}
