package cmd

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/textsafe"
)

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
	// "running" means what status and the TUI count (core.Task.Running):
	// an agent in a permission or question call waits on you instead.
	switch {
	case t.Running():
		b = append(b, "running")
	case t.Session != nil && t.Session.State == core.SessionFailed:
		b = append(b, "failed")
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
	} else if t.OverBudget() {
		b = append(b, "budget")
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
	var tr taskTree
	for i := range tasks {
		tr.add(&tasks[i])
	}
	_, _ = tr.write(w, 0)
}

// taskTree holds a listing as the tree's rows, each row's text rendered
// when its task arrives, so a listing of 100,000 tasks is held as about
// 150 bytes a task instead of as core.Tasks. Every field a row shows is
// cleaned as it is rendered (textsafe.Line): the tree writes to a
// terminal as it is.
type taskTree struct {
	rows   []treeRow
	chunks [][]byte // the rows' text, back to back
	// index finds a row by its task id: ids of up to 8 bytes (all of
	// kandev's) as a number, which hashes faster than a string; others
	// by their text.
	index   map[uint64]int32
	indexS  map[string]int32
	pending map[int32]string // rows whose parent had not arrived yet
	// wide: rows end with their spend (task list --wide)
	wide bool
}

type treeRow struct {
	parent            int32 // -1: printed as a root
	chunk, off, n     int32 // its text in chunks
	first, last, next int32 // children, in list order; -1 for none
}

// treeChunk is the size of a text chunk; a chunk with less than
// treeChunkRoom left is not started on, so rows are written where they
// stay.
const (
	treeChunk     = 1 << 20
	treeChunkRoom = 64 << 10
)

// grow makes room for n more rows.
func (tr *taskTree) grow(n int) {
	if tr.index == nil {
		tr.index = make(map[uint64]int32, n)
	}
	tr.rows = slices.Grow(tr.rows, n)
}

// idKey packs an id of up to 8 bytes, none of them 0, into a number.
func idKey(id string) (uint64, bool) {
	if len(id) > 8 {
		return 0, false
	}
	var k uint64
	for i := 0; i < len(id); i++ {
		if id[i] == 0 {
			return 0, false
		}
		k = k<<8 | uint64(id[i])
	}
	return k, true
}

func (tr *taskTree) lookup(id string) (int32, bool) {
	if k, ok := idKey(id); ok {
		i, found := tr.index[k]
		return i, found
	}
	i, found := tr.indexS[id]
	return i, found
}

// add renders t's row. t may be reused once add returns.
func (tr *taskTree) add(t *core.Task) {
	if tr.index == nil {
		tr.index = map[uint64]int32{}
	}
	i := int32(len(tr.rows))
	row := treeRow{parent: -1, first: -1, last: -1, next: -1}
	if t.ParentID != "" {
		if p, ok := tr.lookup(t.ParentID); ok {
			row.parent = p
		} else {
			if tr.pending == nil {
				tr.pending = map[int32]string{}
			}
			tr.pending[i] = strings.Clone(t.ParentID)
		}
	}
	if k, ok := idKey(t.ID); ok {
		tr.index[k] = i
	} else {
		if tr.indexS == nil {
			tr.indexS = map[string]int32{}
		}
		tr.indexS[strings.Clone(t.ID)] = i
	}
	k := len(tr.chunks) - 1
	if k < 0 || cap(tr.chunks[k])-len(tr.chunks[k]) < treeChunkRoom {
		tr.chunks = append(tr.chunks, make([]byte, 0, treeChunk))
		k++
	}
	start := len(tr.chunks[k])
	tr.chunks[k] = appendRow(tr.chunks[k], t)
	if tr.wide {
		tr.chunks[k] = appendSpend(tr.chunks[k], t)
	}
	row.chunk, row.off, row.n = int32(k), int32(start), int32(len(tr.chunks[k])-start)
	tr.rows = append(tr.rows, row)
}

// usageTokens is a spend's tokens with their parts.
func usageTokens(s core.Spend) string {
	out := fmt.Sprintf("%s (input %s, output %s", core.FormatTokens(s.Tokens), core.FormatTokens(s.Input), core.FormatTokens(s.Output))
	if s.Thought > 0 {
		out += ", thought " + core.FormatTokens(s.Thought)
	}
	if s.CacheRead > 0 || s.CacheWrite > 0 {
		out += ", cache read " + core.FormatTokens(s.CacheRead) + ", cache write " + core.FormatTokens(s.CacheWrite)
	}
	out += ")"
	if s.EstimatedTokens > 0 {
		// kandev's count of what the agent streamed, not yet its own
		// figure (ADR 0077).
		out = "~" + out + ", " + core.FormatTokens(s.EstimatedTokens) + " estimated from streamed text"
	}
	return out
}

// appendSpend appends a row's spend for --wide: the subtree's on a task
// with spending children, else its own; nothing when none was reported.
func appendSpend(b []byte, t *core.Task) []byte {
	u := t.Usage
	if u == nil {
		return b
	}
	s, tree := u.Own, ""
	if u.Tree.Tokens != u.Own.Tokens || u.Tree.CostText() != u.Own.CostText() {
		s, tree = u.Tree, "Σ"
	}
	b = append(b, "  "...)
	b = append(b, tree...)
	if c := s.CostText(); c != "" {
		b = append(b, c...)
		b = append(b, ' ')
	}
	if s.EstimatedTokens > 0 {
		b = append(b, '~')
	}
	b = append(b, core.FormatTokens(s.Tokens)...)
	return append(b, " tok"...)
}

// appendRow appends a task's row without the tree's prefix: glyph,
// stage (the status as shown, core.StageOf), id, title, then the assignee
// and the badges in brackets.
func appendRow(b []byte, t *core.Task) []byte {
	stage := core.StageOf(t)
	b = append(b, stage.Glyph()...)
	b = append(b, ' ')
	st := oneLine(string(stage))
	b = append(b, st...)
	for n := utf8.RuneCountInString(st); n < 11; n++ {
		b = append(b, ' ')
	}
	b = append(b, ' ')
	b = append(b, oneLine(t.ID)...)
	b = append(b, ' ')
	b = append(b, oneLine(t.Title)...)
	b = append(b, "  ["...)
	b = append(b, oneLine(assigneeLabel(*t))...)
	for _, x := range badges(*t) {
		b = append(b, ' ')
		b = append(b, x...)
	}
	return append(b, ']')
}

// oneLine is textsafe.Line with a fast way through the common case, a
// string of printable ASCII.
func oneLine(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return textsafe.Line(s)
		}
	}
	return s
}

// link resolves the parents that came late and threads each row's
// children in list order.
func (tr *taskTree) link() {
	for i, p := range tr.pending {
		if pi, ok := tr.lookup(p); ok {
			tr.rows[i].parent = pi
		}
	}
	tr.pending = nil
	for i := range tr.rows {
		p := tr.rows[i].parent
		if p < 0 {
			continue
		}
		if tr.rows[p].last < 0 {
			tr.rows[p].first = int32(i)
		} else {
			tr.rows[tr.rows[p].last].next = int32(i)
		}
		tr.rows[p].last = int32(i)
	}
}

// reset empties the tree for the next subtree, keeping its first chunk
// and the room of its rows; a large index is dropped rather than cleared,
// so one big subtree does not slow down every small one after it.
func (tr *taskTree) reset() {
	tr.rows = tr.rows[:0]
	if len(tr.chunks) > 0 {
		tr.chunks = tr.chunks[:1]
		tr.chunks[0] = tr.chunks[0][:0]
	}
	tr.index = resetMap(tr.index)
	tr.indexS = resetMap(tr.indexS)
	tr.pending = nil
}

func resetMap[K comparable, V any](m map[K]V) map[K]V {
	if len(m) > 4096 {
		return nil
	}
	clear(m)
	return m
}

// write prints the tree, at most limit rows when limit > 0, and says how
// many rows it printed.
func (tr *taskTree) write(w io.Writer, limit int) (int, error) {
	bw := bufio.NewWriterSize(w, 64*1024)
	printed := tr.writeTo(bw, limit)
	return printed, bw.Flush()
}

// writeTo is write into bw, whose error says whether it was written.
func (tr *taskTree) writeTo(bw *bufio.Writer, limit int) int {
	tr.link()
	printed := 0
	var prefix []byte
	var walk func(i int32, branch string) bool
	walk = func(i int32, branch string) bool {
		if limit > 0 && printed >= limit {
			return false
		}
		r := tr.rows[i]
		bw.Write(prefix)
		bw.WriteString(branch)
		bw.Write(tr.chunks[r.chunk][r.off : r.off+r.n])
		bw.WriteByte('\n')
		printed++
		keep := len(prefix)
		switch branch {
		case "├─ ":
			prefix = append(prefix, "│  "...)
		case "└─ ":
			prefix = append(prefix, "   "...)
		}
		for k := r.first; k >= 0; k = tr.rows[k].next {
			b := "├─ "
			if tr.rows[k].next < 0 {
				b = "└─ "
			}
			if !walk(k, b) {
				return false
			}
		}
		prefix = prefix[:keep]
		return true
	}
	for i := range tr.rows {
		if tr.rows[i].parent < 0 && !walk(int32(i), "") {
			break
		}
	}
	return printed
}

// stageLine is the status as shown (core.StageOf), and the stored status
// when they differ: "◑ back (status todo)".
func stageLine(t *core.Task) string {
	stage := core.StageOf(t)
	line := stage.Glyph() + " " + string(stage)
	if string(stage) != string(t.Status) {
		line += " (status " + string(t.Status) + ")"
	}
	return line
}

func writeTaskDetail(w io.Writer, t core.Task) {
	row := func(k, v string) { fmt.Fprintf(w, "%-17s %s\n", k+":", v) }
	row("id", t.ID)
	row("title", textsafe.Line(t.Title))
	row("status", stageLine(&t))
	row("autopilot", fmt.Sprintf("%v", t.Autopilot))
	row("sandbox", orNone(t.Sandbox))
	row("profile", t.Profile)
	if t.Assignee != nil {
		row("assignee", t.Assignee.Describe())
	}
	if t.HandedBy != nil {
		row("handed by", t.HandedBy.Describe())
	}
	if t.Stuck() {
		row("stuck", "stalled in "+t.Stalled.From.String()+" at "+t.Stalled.At.Local().Format(time.DateTime)+
			" with nobody to escalate to; it waits for you (message it, hand it on, or set its status)")
		row("detail", strings.Join(strings.Fields(t.Stalled.Detail), " "))
	} else if t.BackToYou() {
		row("your turn", "ended without handing on: "+orNothing(strings.Join(strings.Fields(t.Stalled.Detail), " ")))
	} else if t.Stalled != nil {
		row("escalated", t.Stalled.Reason+" from "+t.Stalled.From.String()+" at "+t.Stalled.At.Local().Format(time.DateTime))
		if t.OverBudget() {
			row("detail", oneLine(t.Stalled.Detail))
		}
	}
	if u := t.Usage; u != nil {
		row("tokens", usageTokens(u.Own))
		if c := u.Own.CostText(); c != "" {
			row("cost", c)
		}
		if u.Tree.Tokens != u.Own.Tokens || u.Tree.CostText() != u.Own.CostText() {
			row("subtree", u.UsageLine(true))
		}
		if c := u.ContextLine(); c != "" {
			row("context", c)
		}
	}
	if t.Budget != nil {
		row("budget", budgetLine(t))
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
	if len(t.MCPServers) > 0 {
		row("mcp servers", strings.Join(t.MCPServers, ", "))
	}
	if t.Host == "auto" {
		row("host", "auto (placed on a host with a free slot at its first run)")
	} else if t.Host != "" {
		row("host", t.Host)
	}
	if s := t.Source; s != nil {
		row("source", sourceLine(s))
	}
	if w := t.Workspace; w != nil && w.Mode != core.WorkspaceShared {
		row("workspace", w.Mode+", branch "+w.Branch+" from "+shortID(w.Base)+" of "+w.Repo)
		if w.PullRequest != "" {
			row("pull request", w.PullRequest)
		}
	}
	row("created", t.CreatedAt.Local().Format(time.DateTime)+" by "+t.CreatedBy.String())
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
		if s.Error != "" {
			row("session error", s.Error)
		}
		if s.EndReason != "" {
			row("session ended", s.EndReason)
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
	writeChildQuestions(w, t)
	if t.Description != "" {
		fmt.Fprintf(w, "\n%s\n", t.Description)
	}
}

// writeChildQuestions lists the pending questions t's subtasks asked it,
// in the order they are answered (ADR 0069): the one its escalation names
// first. While a person holds t they are that person's to answer, one by
// one, on t.
func writeChildQuestions(w io.Writer, t core.Task) {
	if len(t.ChildQuestions) == 0 {
		return
	}
	who := "its agent answers them"
	switch {
	case t.Assignee != nil && t.Assignee.IsOperator():
		who = "yours to answer while it is with you: kandev task answer " + t.ID + " TEXT answers the first"
	case t.WithPerson():
		who = t.Assignee.Name + "'s to answer while it is with them"
	}
	fmt.Fprintf(w, "%-17s %d from subtasks, %s\n", "questions to it:", len(t.ChildQuestions), who)
	for i, cq := range t.ChildQuestions {
		line := fmt.Sprintf("%d. %s from subtask %s (%s)", i+1, cq.Question.ID, cq.TaskID, textsafe.Line(cq.TaskTitle))
		if cq.Named {
			line += ", the one its escalation names"
		}
		fmt.Fprintf(w, "%-17s %s\n", "", line)
		for _, l := range strings.Split(cq.Question.Text, "\n") {
			fmt.Fprintf(w, "%-17s    %s\n", "", l)
		}
	}
}

// formatMessage renders one conversation entry for `task log`.
func formatMessage(m core.Message) string {
	ts := m.CreatedAt.Local().Format("15:04:05")
	who := m.Author
	switch m.Kind {
	case core.MsgPrompt:
		return fmt.Sprintf("%s %s › %s", ts, who.Label(), m.Text)
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
		return fmt.Sprintf("%s answer (%s) › %s", ts, who.Label(), m.Text)
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

// treeStream prints a listing in the tree's order (ADR 0037: a top-level
// task, then its subtree, depth first) one top-level subtree at a time:
// a subtree is whole when a task arrives whose parent is not in it, so
// it is printed then and forgotten. The rows are the ones taskTree would
// print for the whole listing at once, hidden parents included: a
// visible task under a hidden one prints as a root where it comes.
type treeStream struct {
	tr      taskTree
	hidden  idSet // the current subtree's hidden tasks
	open    bool  // the current subtree has a task, shown or hidden
	bw      *bufio.Writer
	limit   int // rows to print at most (0: all)
	printed int
	flushed bool
}

func newTreeStream(w io.Writer, limit int) *treeStream {
	return &treeStream{bw: bufio.NewWriterSize(w, 64*1024), limit: limit}
}

// full reports whether the stream has printed its limit of rows: what
// comes after is not kept.
func (s *treeStream) full() bool { return s.limit > 0 && s.printed >= s.limit }

// add takes the listing's next task, shown as a row or hidden (kept only
// to know its children belong to the subtree). t may be reused once add
// returns.
func (s *treeStream) add(t *core.Task, shown bool) error {
	if s.full() {
		return nil
	}
	if s.open && (t.ParentID == "" || !s.inSubtree(t.ParentID)) {
		if err := s.endSubtree(); err != nil || s.full() {
			return err
		}
	}
	s.open = true
	if shown {
		s.tr.add(t)
	} else {
		s.hidden.add(t.ID)
	}
	return nil
}

func (s *treeStream) inSubtree(id string) bool {
	if _, ok := s.tr.lookup(id); ok {
		return true
	}
	return s.hidden.has(id)
}

// endSubtree prints the subtree read so far. The first one is flushed at
// once, so the first rows reach the terminal while the rest is read; after
// that output goes out whenever 8 KiB are waiting, not once per top-level
// task: a write for each of 100,000 one-row subtrees costs more than the
// whole rendering.
func (s *treeStream) endSubtree() error {
	limit := 0
	if s.limit > 0 {
		limit = s.limit - s.printed
	}
	s.printed += s.tr.writeTo(s.bw, limit)
	s.tr.reset()
	s.hidden.reset()
	s.open = false
	if !s.flushed || s.bw.Buffered() >= 8<<10 {
		s.flushed = true
		return s.bw.Flush()
	}
	return nil
}

// close prints the last subtree and flushes.
func (s *treeStream) close() error {
	if s.open && !s.full() {
		if err := s.endSubtree(); err != nil {
			return err
		}
	}
	return s.bw.Flush()
}

// idSet is a set of task ids, those of up to 8 bytes as numbers (see
// idKey).
type idSet struct {
	n map[uint64]struct{}
	s map[string]struct{}
}

func (set *idSet) add(id string) {
	if k, ok := idKey(id); ok {
		if set.n == nil {
			set.n = map[uint64]struct{}{}
		}
		set.n[k] = struct{}{}
		return
	}
	if set.s == nil {
		set.s = map[string]struct{}{}
	}
	set.s[strings.Clone(id)] = struct{}{}
}

func (set *idSet) has(id string) bool {
	if k, ok := idKey(id); ok {
		_, found := set.n[k]
		return found
	}
	_, found := set.s[id]
	return found
}

func (set *idSet) reset() {
	set.n = resetMap(set.n)
	set.s = resetMap(set.s)
}

// sourceLine is a task's tracker source as task show and the TUI give it:
// its reference and its link.
func sourceLine(s *core.TaskSource) string {
	if s.URL == "" {
		return s.Ref
	}
	return s.Ref + " " + s.URL
}
