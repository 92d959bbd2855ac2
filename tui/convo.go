package tui

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// maxConversation bounds how many entries of a conversation the detail
// pane holds at once. The pane shows a window of the conversation: it
// starts at the tail, grows backwards as the operator scrolls up (a page
// at a time) and gives up entries at the far end when it is full.
const maxConversation = 5000

// conversation is a window of the selected task's messages, ordered by
// sequence, and their rendered lines for the current width. Entries merge
// by sequence number, newest UpdatedAt wins, so pages and live events may
// arrive in any order.
//
// The window is contiguous: it holds every entry from msgs[0] to the last
// one. older says the server has entries before it; newer says the window
// was cut at its newest end (the operator is reading far back), so live
// entries after it wait in stash until a page joins the window to them.
type conversation struct {
	taskID string
	msgs   []core.Message
	cache  [][]string // rendered lines per message; nil = stale
	starts []int      // the first line of each message in lines
	lines  []string   // the markers and all rendered lines, in order
	head   int        // marker lines before the first message
	end    int        // lines up to the end of the last message
	width  int
	dirty  bool
	marks  [2]string // the top and bottom markers last rendered

	loaded bool // the tail arrived
	older  bool // the server has entries before msgs[0]
	newer  bool // the window stops short of the newest entry

	// Page requests in flight, and the last failure, of each direction.
	olderBusy, newerBusy bool
	olderErr, newerErr   string

	// stash keeps live entries past the window while newer is set, newest
	// version per sequence number. stashLost: it overflowed and entries
	// were dropped; the next page request starts it afresh.
	stash     map[int64]core.Message
	stashLost bool

	// fetching: entries being read again because an append did not join
	// them (appendText).
	fetching map[int64]bool

	// grown keeps, per streamed entry (by sequence), how much of its
	// rendering text appended to it cannot change (renderStreamed), so an
	// append renders only what follows; growing: an append since the last
	// render kept its entry's lines for that.
	grown   map[int64]growth
	growing bool
}

// logPos is a place in the log that survives entries arriving, leaving
// and growing: a line of the entry with sequence number seq (a negative
// line counts the marker lines above the first entry).
type logPos struct {
	seq  int64
	line int
}

func (c *conversation) reset(taskID string) {
	*c = conversation{taskID: taskID, dirty: true}
}

func (c *conversation) last() int64 {
	if len(c.msgs) == 0 {
		return 0
	}
	return c.msgs[len(c.msgs)-1].Seq
}

func (c *conversation) first() int64 {
	if len(c.msgs) == 0 {
		return 0
	}
	return c.msgs[0].Seq
}

// merge puts one entry in its place (or replaces an older version of it)
// and reports whether anything changed.
func (c *conversation) merge(m core.Message) bool {
	n := len(c.msgs)
	if n == 0 || m.Seq > c.msgs[n-1].Seq {
		c.msgs = append(c.msgs, m)
		c.cache = append(c.cache, nil)
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
	c.msgs = append(c.msgs, core.Message{})
	copy(c.msgs[i+1:], c.msgs[i:])
	c.msgs[i] = m
	c.cache = append(c.cache, nil)
	copy(c.cache[i+1:], c.cache[i:])
	c.cache[i] = nil
	c.dirty = true
	return true
}

// live merges an entry from the event stream. Entries before the window
// are left for the page that reads back to them; entries past a cut
// window wait in the stash. keepFront: the operator is not following the
// newest output, so a full window gives up its newest end, not the part
// being read.
func (c *conversation) live(m core.Message, keepFront bool) {
	if m.TaskID != c.taskID || c.taskID == "" {
		return
	}
	if len(c.msgs) > 0 {
		if c.newer && m.Seq > c.last() {
			c.stashEntry(m)
			return
		}
		if c.older && m.Seq < c.first() {
			return
		}
	}
	if c.merge(m) {
		c.bound(keepFront)
	}
}

// appendText applies text streamed onto an entry (ADR 0050): the entry
// grows in place and only it is rendered again. It reports the entry to
// read again when the append does not join what the window holds (an
// append was missed, or the entry's page is still on its way); 0 when
// none, or when that read is already in flight.
func (c *conversation) appendText(a core.MessageAppend) (refetch int64) {
	if a.TaskID != c.taskID || c.taskID == "" {
		return 0
	}
	n := len(c.msgs)
	i := sort.Search(n, func(i int) bool { return c.msgs[i].Seq >= a.Seq })
	switch {
	case i < n && c.msgs[i].Seq == a.Seq:
		switch a.Apply(&c.msgs[i]) {
		case core.AppendApplied:
			if g, ok := c.grown[a.Seq]; ok && a.Field == "" && c.cache[i] != nil && g.w == c.width {
				c.growing = true // render extends its lines
			} else {
				c.cache[i] = nil
			}
			c.dirty = true
			return 0
		case core.AppendHeld:
			return 0
		}
	case n > 0 && c.newer && a.Seq > c.last():
		if m, ok := c.stash[a.Seq]; ok {
			if a.Apply(&m) != core.AppendGap {
				c.stash[a.Seq] = m
				return 0
			}
			delete(c.stash, a.Seq) // the page that joins the stash reads it whole
		}
		return 0
	case n > 0 && c.older && a.Seq < c.first():
		return 0
	}
	if c.fetching[a.Seq] {
		return 0
	}
	if c.fetching == nil {
		c.fetching = map[int64]bool{}
	}
	c.fetching[a.Seq] = true
	return a.Seq
}

// fetched takes an entry read again after an append that did not join.
func (c *conversation) fetched(seq int64, p api.ConversationPage, keepFront bool) {
	delete(c.fetching, seq)
	for _, m := range p.Messages {
		if m.Seq == seq {
			c.live(m, keepFront)
		}
	}
}

func (c *conversation) stashEntry(m core.Message) {
	if c.stashLost {
		return
	}
	if old, ok := c.stash[m.Seq]; ok && m.UpdatedAt.Before(old.UpdatedAt) {
		return
	}
	if c.stash == nil {
		c.stash = map[int64]core.Message{}
	}
	if _, ok := c.stash[m.Seq]; !ok && len(c.stash) >= maxConversation {
		c.stash, c.stashLost = nil, true
		return
	}
	c.stash[m.Seq] = m
}

// drainStash merges the stashed entries the window now reaches (all of
// them once it reaches the newest end).
func (c *conversation) drainStash() {
	if len(c.stash) == 0 {
		return
	}
	seqs := make([]int64, 0, len(c.stash))
	for seq := range c.stash {
		if !c.newer || seq <= c.last() {
			seqs = append(seqs, seq)
		}
	}
	// In order, so entries past the window append rather than insert.
	slices.Sort(seqs)
	for _, seq := range seqs {
		c.merge(c.stash[seq])
		delete(c.stash, seq)
	}
	if len(c.stash) == 0 {
		c.stash = nil
	}
}

// bound keeps the window within maxConversation entries, giving up the
// newest end (keepFront) or the oldest.
func (c *conversation) bound(keepFront bool) {
	over := len(c.msgs) - maxConversation
	if over <= 0 {
		return
	}
	if keepFront {
		n := len(c.msgs) - over
		clear(c.msgs[n:])
		clear(c.cache[n:])
		c.msgs, c.cache = c.msgs[:n], c.cache[:n]
		if !c.newer {
			c.newer, c.stash, c.stashLost = true, nil, false
		}
	} else {
		c.msgs = append(c.msgs[:0:0], c.msgs[over:]...)
		c.cache = append(c.cache[:0:0], c.cache[over:]...)
		c.older = true
	}
	c.dirty = true
}

// addTail takes the conversation's newest page. Entries the window held
// from before it (events that arrived first, or a window that fell behind
// while events were missed) are dropped when the page does not reach
// back to them: they may be stale, and reading back fetches them fresh.
func (c *conversation) addTail(p api.ConversationPage) {
	if p.Older && len(p.Messages) > 0 {
		i := sort.Search(len(c.msgs), func(i int) bool { return c.msgs[i].Seq >= p.First })
		if i > 0 {
			c.msgs = append(c.msgs[:0:0], c.msgs[i:]...)
			c.cache = append(c.cache[:0:0], c.cache[i:]...)
		}
	}
	for _, m := range p.Messages {
		c.merge(m)
	}
	c.older = p.Older && len(p.Messages) > 0
	c.loaded, c.dirty = true, true
	c.bound(false)
}

// addOlder takes a page read back from before the window. keepFront: the
// window gives up its newest end when full (the operator is reading back).
func (c *conversation) addOlder(before int64, p api.ConversationPage, keepFront bool) {
	if len(c.msgs) == 0 || c.first() != before {
		return // the window moved meanwhile; the page no longer joins it
	}
	// A page comes in order: the part before the window goes in front of
	// it in one go. (Anything else merges entry by entry.)
	page := p.Messages
	for i := range page {
		if page[i].Seq >= before || (i > 0 && page[i].Seq <= page[i-1].Seq) {
			page = nil
			break
		}
	}
	if page != nil {
		c.msgs = append(append(make([]core.Message, 0, len(page)+len(c.msgs)), page...), c.msgs...)
		c.cache = append(make([][]string, len(page), len(page)+len(c.cache)), c.cache...)
	} else {
		for _, m := range p.Messages {
			if m.Seq < before {
				c.merge(m)
			}
		}
	}
	c.older = p.Older && len(p.Messages) > 0
	c.dirty = true
	c.bound(keepFront)
}

// addNewer takes a page read forward from after, a sequence number inside
// (or just before) the window; it reports whether it joined the window.
// When it reaches the newest entry the stash joins too and the window
// follows live events again, unless the stash lost entries meanwhile.
func (c *conversation) addNewer(after int64, p api.ConversationPage, keepFront bool) bool {
	if len(c.msgs) == 0 || after > c.last() {
		return false // the window was cut below the cursor meanwhile
	}
	for _, m := range p.Messages {
		if c.older && m.Seq < c.first() {
			continue
		}
		c.merge(m)
	}
	if c.newer && !p.More && !c.stashLost {
		c.newer = false
	}
	c.drainStash()
	c.dirty = true
	c.bound(keepFront)
	return true
}

// startNewer prepares for a forward page request: the stash starts
// afresh if it lost entries (the page will carry them).
func (c *conversation) startNewer() {
	if c.stashLost {
		c.stash, c.stashLost = nil, false
	}
}

// posOf is the place of line i of the log.
func (c *conversation) posOf(i int) logPos {
	if len(c.msgs) == 0 {
		return logPos{line: i}
	}
	if i < c.head {
		return logPos{seq: c.msgs[0].Seq, line: i - c.head}
	}
	k := sort.Search(len(c.starts), func(k int) bool { return c.starts[k] > i }) - 1
	k = max(k, 0)
	return logPos{seq: c.msgs[k].Seq, line: i - c.starts[k]}
}

// lineOf is where a place is in the log now: the same line of the same
// entry, or the next entry's first line when that entry left the window.
func (c *conversation) lineOf(p logPos) int {
	if len(c.msgs) == 0 {
		return clamp(p.line, 0, len(c.lines))
	}
	k := sort.Search(len(c.msgs), func(k int) bool { return c.msgs[k].Seq >= p.seq })
	switch {
	case k == len(c.msgs):
		return c.end
	case c.msgs[k].Seq != p.seq:
		return c.starts[k]
	}
	return clamp(c.starts[k]+p.line, 0, len(c.lines))
}

// linesFrom counts the lines of the entries from seq on.
func (c *conversation) linesFrom(seq int64) int {
	k := sort.Search(len(c.msgs), func(k int) bool { return c.msgs[k].Seq >= seq })
	if k == len(c.msgs) {
		return 0
	}
	return c.end - c.starts[k]
}

// markers are the log's first and last lines: whether there is more to
// read back (and whether it is loading), or the conversation's start; and
// whether newer entries wait below a cut window.
func (c *conversation) markers() (top, bottom string) {
	if !c.loaded || len(c.msgs) == 0 {
		return "", ""
	}
	switch {
	case !c.older:
		top = "── beginning of conversation ──"
	case c.olderErr != "":
		top = "↑ older entries: " + c.olderErr + " (↑ retries)"
	case c.olderBusy:
		top = "↑ loading older…"
	default:
		top = "↑ older entries (scroll up to load)"
	}
	if c.newer {
		switch {
		case c.newerErr != "":
			bottom = "↓ newer entries: " + c.newerErr + " (↓ retries, G jumps to the newest)"
		case c.newerBusy:
			bottom = "↓ loading newer…"
		default:
			bottom = "↓ newer entries (scroll down to load, G jumps to the newest)"
		}
	}
	return top, bottom
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
	top, bottom := c.markers()
	if top != c.marks[0] || bottom != c.marks[1] {
		c.marks, c.dirty = [2]string{top, bottom}, true
	}
	if !c.dirty {
		return
	}
	c.lines = c.lines[:0]
	c.starts = c.starts[:0]
	if top != "" {
		c.lines = append(c.lines, st.dim.Render(truncate(top, w)))
	}
	c.head = len(c.lines)
	growing := c.growing
	c.growing = false
	if len(c.grown) > 2*len(c.msgs)+64 {
		c.pruneGrown()
	}
	for i := range c.msgs {
		m := &c.msgs[i]
		switch {
		case streamedKind(m.Kind):
			g, ok := c.grown[m.Seq]
			if c.cache[i] == nil || (growing && ok && g.text != len(m.Text)) {
				if c.grown == nil {
					c.grown = map[int64]growth{}
				}
				c.cache[i], c.grown[m.Seq] = renderStreamed(st, *m, w, loc, c.cache[i], g)
			}
		case c.cache[i] == nil:
			c.cache[i] = renderMessage(st, *m, w, loc)
		}
		c.starts = append(c.starts, len(c.lines))
		c.lines = append(c.lines, c.cache[i]...)
	}
	c.end = len(c.lines)
	if bottom != "" {
		c.lines = append(c.lines, st.dim.Render(truncate(bottom, w)))
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

// layoutOf is how entry m is laid out at width w, and its text to show.
func layoutOf(st styles, m core.Message, w int, loc *time.Location) (entryLayout, string) {
	var meta messageMeta
	if len(m.Meta) > 0 {
		_ = json.Unmarshal(m.Meta, &meta)
	}
	ts := m.CreatedAt.In(loc).Format("15:04:05")
	label, text := "", sanitize(m.Text)
	style := st.logNote
	switch m.Kind {
	case core.MsgPrompt:
		label, style = m.Author.Label()+" ›", st.logYou
		if meta.Delivery == string(api.DeliveryInterrupt) {
			label = m.Author.Label() + " (interrupt) ›"
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
		label, style = "answer ("+m.Author.Label()+") ›", st.logYou
	case core.MsgHandoff:
		label, style = "handoff ›", st.logQ
	default:
		label = "·"
	}
	head := ts + " " + label + " "
	indent := min(width(head), max(2, w/3))
	l := entryLayout{st: st, w: w, indent: indent, pad: strings.Repeat(" ", indent),
		h:   st.dim.Render(ts) + " " + style.Render(label) + " ",
		dim: m.Kind == core.MsgThought || m.Kind == core.MsgStatus || m.Kind == core.MsgTurnEnd || m.Kind == core.MsgUserNotice}
	l.narrow = width(head) > indent
	return l, text
}

// renderMessage lays out one entry: a timestamped head, then the text
// with a hanging indent. Agent text is sanitized first, so escape
// sequences and control characters never reach the terminal.
func renderMessage(st styles, m core.Message, w int, loc *time.Location) []string {
	l, text := layoutOf(st, m, w, loc)
	return l.lines(nil, text, true)
}

// entryLayout is how an entry's lines are laid out: its head, the
// hanging indent of its text, whether its lines are dimmed.
type entryLayout struct {
	st          styles
	w, indent   int
	h, pad      string
	narrow, dim bool
}

// lines appends to out the lines of text (sanitized), the first behind the
// entry's head when head is set, the others (all, without it) indented.
func (l entryLayout) lines(out []string, text string, head bool) []string {
	lines := wrap(text, max(1, l.w-l.indent))
	h := l.pad
	if head {
		h = l.h
		if l.narrow {
			// Very narrow: the head takes its own line.
			out = append(out, l.style(truncate(h, l.w)))
			h = l.pad
		}
	}
	for i, ln := range lines {
		if i == 0 {
			out = append(out, l.style(h+ln))
			continue
		}
		out = append(out, l.style(l.pad+ln))
	}
	return out
}

func (l entryLayout) style(s string) string {
	if l.dim {
		return l.st.dim.Render(s)
	}
	return s
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
