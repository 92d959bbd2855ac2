package tui

import (
	"fmt"
	"strings"
	"time"
)

// treePane is the task tree: the flattened visible rows, the cursor and
// the scroll offset. It is rebuilt (flatten) only when the tree's shape,
// the collapsed set or the filter change; drawing touches visible rows only.
type treePane struct {
	rows      []flatRow
	cursor    int
	offset    int
	selected  string // the selected task's id; survives rebuilds
	collapsed map[string]bool
	// need, as last computed, and what it was computed for: the rows'
	// layout (flattened), the store's gen, the scroll and the height.
	needed   int
	needKey  [4]uint64
	flattens uint64
}

// flatRow is one visible line of the tree.
type flatRow struct {
	id      string
	prefix  string // tree branches drawn before the glyph
	kids    int    // children shown under it (when expanded) or hidden
	folded  bool   // collapsed, with children
	context bool   // shown only because a descendant matches the filter
}

func newTreePane() treePane { return treePane{collapsed: map[string]bool{}} }

// flatten lays the store out as rows under the filter and collapsed set,
// and keeps the selection on the same task when it is still shown.
func (tp *treePane) flatten(s *taskStore, f filter) {
	if n := len(s.byID); cap(tp.rows) < n {
		// Sized once: growing by appends to 100,000 rows allocated several
		// times the final slice, a good part of the TUI's peak memory.
		tp.rows = make([]flatRow, 0, n)
	}
	tp.rows = tp.rows[:0]
	tp.flattens++
	filtering := f.active()
	if filtering {
		// Children come after their parents in creation order, so one
		// backwards pass decides which tasks (or descendants) match.
		for _, e := range s.byID {
			e.keep = false
		}
		for i := len(s.order) - 1; i >= 0; i-- {
			e := s.byID[s.order[i]]
			if e == nil {
				continue
			}
			e.match = f.match(e.t)
			if e.match {
				e.keep = true
			}
			if e.keep && e.t.ParentID != "" {
				if p := s.byID[e.t.ParentID]; p != nil {
					p.keep = true
				}
			}
		}
	}
	for _, e := range s.byID {
		e.row = -1
	}
	var kidBuf []string
	var visit func(id, pre string, last, root bool)
	visit = func(id, pre string, last, root bool) {
		e := s.byID[id]
		row := flatRow{id: id, context: filtering && !e.match}
		cont := pre
		if !root {
			if last {
				row.prefix, cont = pre+"└─", pre+"  "
			} else {
				row.prefix, cont = pre+"├─", pre+"│ "
			}
		}
		start := len(kidBuf)
		for _, k := range s.kids[id] {
			if ke := s.byID[k]; ke != nil && (!filtering || ke.keep) {
				kidBuf = append(kidBuf, k)
			}
		}
		kids := kidBuf[start:]
		row.kids = len(kids)
		row.folded = len(kids) > 0 && tp.collapsed[id]
		e.row = len(tp.rows)
		tp.rows = append(tp.rows, row)
		if !row.folded {
			for i, k := range kids {
				visit(k, cont, i == len(kids)-1, false)
			}
		}
		kidBuf = kidBuf[:start]
	}
	for _, id := range s.order {
		e := s.byID[id]
		if e == nil || !s.isRoot(e.t) || (filtering && !e.keep) {
			continue
		}
		visit(id, "", true, true)
	}
	tp.reselect(s)
}

// reselect moves the cursor to the selected task's row, or keeps the row
// index when the task is gone.
func (tp *treePane) reselect(s *taskStore) {
	if e := s.byID[tp.selected]; e != nil && e.row >= 0 {
		tp.cursor = e.row
		return
	}
	tp.cursor = clamp(tp.cursor, 0, len(tp.rows)-1)
	if len(tp.rows) == 0 {
		tp.cursor, tp.selected = 0, ""
		return
	}
	tp.selected = tp.rows[tp.cursor].id
}

// move puts the cursor on row i and reports whether the selection changed.
func (tp *treePane) move(i int) bool {
	if len(tp.rows) == 0 {
		return false
	}
	i = clamp(i, 0, len(tp.rows)-1)
	tp.cursor = i
	id := tp.rows[i].id
	changed := id != tp.selected
	tp.selected = id
	return changed
}

// window is how many task rows fit in a pane of h lines: all of them, or,
// when they overflow, h less a line above and one below that say how many
// rows are hidden there.
func (tp *treePane) window(h int) int {
	if len(tp.rows) <= h || h < 3 {
		return max(1, h)
	}
	return h - 2
}

// scrollTo keeps the cursor within the visible rows of a pane of h lines.
func (tp *treePane) scrollTo(h int) {
	h = tp.window(h)
	if tp.cursor < tp.offset {
		tp.offset = tp.cursor
	}
	if tp.cursor >= tp.offset+h {
		tp.offset = tp.cursor - h + 1
	}
	tp.offset = clamp(tp.offset, 0, max(0, len(tp.rows)-h))
}

// need is the width the rows shown in a pane of h lines take whole (see
// rowModel.need); 0 with no rows. Only visible rows count, as for view.
func (tp *treePane) need(s *taskStore, h int, now time.Time) int {
	key := [4]uint64{tp.flattens, s.gen, uint64(tp.offset), uint64(h)}
	if key == tp.needKey {
		return tp.needed
	}
	n := 0
	end := min(len(tp.rows), tp.offset+tp.window(h))
	for i := tp.offset; i < end; i++ {
		if e := s.byID[tp.rows[i].id]; e != nil {
			n = max(n, rowFor(e.t, now, 0).need(tp.rows[i]))
		}
	}
	tp.needed, tp.needKey = n, key
	return n
}

// view draws h rows of w cells: only the visible ones are rendered.
func (tp *treePane) view(st styles, s *taskStore, w, h int, now time.Time, frame int, focused bool) []string {
	out := make([]string, 0, h)
	if len(tp.rows) == 0 {
		out = append(out, st.dim.Render(fit("  no tasks here — press n to create one", w)))
	}
	win := tp.window(h)
	overflow := win < len(tp.rows) && win < h
	if overflow {
		out = append(out, moreLine(st, "↑", tp.offset, w))
	}
	end := min(len(tp.rows), tp.offset+win)
	for i := tp.offset; i < end; i++ {
		r := tp.rows[i]
		e := s.byID[r.id]
		if e == nil {
			out = append(out, strings.Repeat(" ", w))
			continue
		}
		rm := rowFor(e.t, now, frame)
		sel := i == tp.cursor
		out = append(out, rm.render(st, r, w, sel, focused))
	}
	if overflow {
		for len(out) < h-1 {
			out = append(out, strings.Repeat(" ", w))
		}
		out = append(out, moreLine(st, "↓", len(tp.rows)-end, w))
	}
	for len(out) < h {
		out = append(out, strings.Repeat(" ", w))
	}
	return out
}

// moreLine says how many rows are hidden past one edge of the tree; blank
// when none are.
func moreLine(st styles, arrow string, n, w int) string {
	if n <= 0 {
		return strings.Repeat(" ", w)
	}
	return st.dim.Render(fit(fmt.Sprintf("  %s %d more", arrow, n), w))
}

func clamp(v, lo, hi int) int {
	if v > hi {
		v = hi
	}
	if v < lo {
		v = lo
	}
	return v
}
