package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// Conversation paging, at the Update level with the fake client: the tail
// first, older pages on demand, a bounded window, and merging by sequence
// number whatever order pages and events arrive in.

// entries are agent messages "entry N" for N in [from, to].
func entries(task string, from, to int) []core.Message {
	out := make([]core.Message, 0, to-from+1)
	for i := from; i <= to; i++ {
		out = append(out, agentEntry(task, i, "entry "+itoa(i), testNow))
	}
	return out
}

func agentEntry(task string, seq int, text string, at time.Time) core.Message {
	return core.Message{Seq: int64(seq), TaskID: task, Kind: core.MsgAgent, Text: text, CreatedAt: testNow, UpdatedAt: at}
}

// logLines is the log part of the screen (stacked layout): the lines
// under the log's rule, down to the status bar.
func (d *driver) logLines() []string {
	d.t.Helper()
	lines := strings.Split(d.view(), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "── log") || strings.HasPrefix(l, "━━ log") {
			end := len(lines) - 1 - len(d.m.layout().statusLines)
			return lines[i+1 : end]
		}
	}
	d.t.Fatalf("no log on screen:\n%s", d.view())
	return nil
}

func (d *driver) logTop() string {
	d.t.Helper()
	return strings.TrimSpace(d.logLines()[0])
}

// seqs are the sequence numbers the window holds, checked to be strictly
// increasing.
func (d *driver) seqs() []int64 {
	d.t.Helper()
	var out []int64
	for i, m := range d.m.detail.convo.msgs {
		if i > 0 && m.Seq <= out[i-1] {
			d.t.Fatalf("window out of order at %d: %d after %d", i, m.Seq, out[i-1])
		}
		out = append(out, m.Seq)
	}
	return out
}

func bigConvo(n int) *fakeClient {
	f := newFake(demoTasks()...)
	f.convo["kid001"] = entries("kid001", 1, n)
	return f
}

func TestConversationLoadsTailFirstAndOlderOnDemand(t *testing.T) {
	f := bigConvo(1210)
	d := newDriver(t, f, 80, 24)
	d.selectTask("kid001")
	calls := f.conversationCalls("kid001")
	if len(calls) != 1 || calls[0].Before != -1 || calls[0].After != 0 || calls[0].Limit != convoPageSize {
		t.Fatalf("the tail should take one request (Before -1), got %+v", calls)
	}
	if s := d.seqs(); len(s) != convoPageSize || s[0] != 711 || s[len(s)-1] != 1210 {
		t.Fatalf("window after the tail: %d entries, %d..%d", len(s), s[0], s[len(s)-1])
	}
	d.mustShow("entry 1210")
	d.mustNotShow("beginning of conversation")

	// To the top of the log: the page before the window loads, and the
	// view stays on the entries it showed (the new page's last entry just
	// above them).
	d.keys("tab", "g")
	calls = f.conversationCalls("kid001")
	if len(calls) != 2 || calls[1].Before != 711 {
		t.Fatalf("older page request: %+v", calls)
	}
	if top := d.logTop(); !strings.HasSuffix(top, "entry 710") {
		t.Fatalf("the view should keep its place, top line %q", top)
	}
	if s := d.seqs(); s[0] != 211 || len(s) != 1000 {
		t.Fatalf("window after one older page: %d..., %d entries", s[0], len(s))
	}
	d.keys("g")
	d.keys("g")
	if n := len(f.conversationCalls("kid001")); n != 3 {
		t.Fatalf("%d requests; the start of the conversation needs none", n)
	}
	if top := d.logTop(); top != "── beginning of conversation ──" {
		t.Fatalf("top line %q", top)
	}
	if s := d.seqs(); len(s) != 1210 || s[0] != 1 {
		t.Fatalf("the whole conversation: %d entries from %d", len(s), s[0])
	}
	d.mustShow("log · scrolled (G follows)")
	// New output while reading back is counted, then followed.
	m := agentEntry("kid001", 1211, "fresh", testNow)
	f.addMessages("kid001", m)
	f.push(core.Event{Type: core.EventMessageAdded, TaskID: "kid001", Message: &m})
	d.settle()
	d.mustShow("1 new lines below (G follows)")
	d.keys("G")
	d.mustShow("fresh")
	if n := len(f.conversationCalls("kid001")); n != 3 {
		t.Fatalf("following again needs no request (%d)", n)
	}
}

func TestConversationScrollingUpLoadsBeforeTheTop(t *testing.T) {
	f := bigConvo(1100)
	d := newDriver(t, f, 80, 60)
	d.selectTask("kid001")
	d.keys("tab")
	// Page up until the start shows: the pages load on the way, before
	// the top is reached (within a screen of it).
	seen := map[string]bool{}
	for i := 0; i < 400 && !strings.Contains(d.view(), "beginning of conversation"); i++ {
		for _, l := range d.logLines() {
			if strings.Contains(l, "loading older") {
				seen["loading"] = true
			}
		}
		d.keys("pgup")
	}
	d.mustShow("── beginning of conversation ──", "entry 1 ")
	calls := f.conversationCalls("kid001")
	if len(calls) != 3 || calls[1].Before != 601 || calls[2].Before != 101 {
		t.Fatalf("requests %+v", calls)
	}
	// Every entry once, in order, on the way back down.
	want := 1
	for i := 0; i < 400 && want <= 1100; i++ {
		for _, l := range d.logLines() {
			if f := strings.Fields(l); len(f) == 5 && f[3] == "entry" && f[4] == itoa(want) {
				want++
			}
		}
		d.keys("pgdown")
	}
	if want != 1101 {
		t.Fatalf("reading down stopped at entry %d:\n%s", want, d.view())
	}
}

func TestConversationMergesPagesAndEventsInAnyOrder(t *testing.T) {
	f := bigConvo(700)
	f.gate = make(chan struct{})
	d := newDriver(t, f, 80, 24)
	d.selectTask("kid001") // the tail request waits at the gate
	if !d.m.detail.loading {
		t.Fatal("the tail should be in flight")
	}
	d.mustShow("log (loading…)")
	later := testNow.Add(time.Minute)
	newEntry := agentEntry("kid001", 701, "live before the page", later)
	inTail := agentEntry("kid001", 650, "updated before the page", later)
	oldOne := agentEntry("kid001", 5, "an update far back", later)
	f.addMessages("kid001", newEntry)
	for _, m := range []core.Message{newEntry, inTail, oldOne} {
		f.push(core.Event{Type: core.EventMessageUpdated, TaskID: "kid001", Message: &m})
	}
	d.settle()
	close(f.gate)
	d.settle()
	s := d.seqs()
	if s[0] != 202 || s[len(s)-1] != 701 || len(s) != 500 {
		t.Fatalf("window %d..%d (%d entries), want 202..701", s[0], s[len(s)-1], len(s))
	}
	c := &d.m.detail.convo
	if got := c.msgs[650-202].Text; got != "updated before the page" {
		t.Fatalf("the newer event should win over the older page: %q", got)
	}
	// An older version arriving late loses; an entry before the window
	// is left for the page that reads back to it.
	stale := agentEntry("kid001", 700, "stale", testNow.Add(-time.Hour))
	back := agentEntry("kid001", 7, "far back", later)
	for _, m := range []core.Message{stale, back} {
		f.push(core.Event{Type: core.EventMessageUpdated, TaskID: "kid001", Message: &m})
	}
	d.settle()
	if c.msgs[len(c.msgs)-2].Text != "entry 700" || c.first() != 202 {
		t.Fatalf("stale or out-of-window events were merged: %q, first %d", c.msgs[len(c.msgs)-2].Text, c.first())
	}
	d.mustShow("live before the page")
}

func TestConversationWindowIsBounded(t *testing.T) {
	const n = maxConversation + 1500
	f := bigConvo(n)
	d := newDriver(t, f, 80, 24)
	d.selectTask("kid001")
	d.keys("tab")
	for i := 0; i < 20 && d.m.detail.convo.older; i++ {
		d.keys("g")
	}
	c := &d.m.detail.convo
	if c.older || c.first() != 1 {
		t.Fatalf("reading back should reach the start (first %d)", c.first())
	}
	if len(c.msgs) > maxConversation || !c.newer {
		t.Fatalf("window of %d entries (newer %v): it must stay within %d by giving up its newest end", len(c.msgs), c.newer, maxConversation)
	}
	d.seqs()
	// Live output past a cut window waits, and is counted as newer.
	m := agentEntry("kid001", n+1, "while reading back", testNow)
	f.addMessages("kid001", m)
	f.push(core.Event{Type: core.EventMessageAdded, TaskID: "kid001", Message: &m})
	d.settle()
	if c.last() > int64(n) || len(c.stash) != 1 {
		t.Fatalf("a live entry past a cut window should wait in the stash (last %d, stash %d)", c.last(), len(c.stash))
	}
	d.mustShow("scrolled back (G jumps to the newest)")

	// G on a cut window reads the tail afresh.
	before := len(f.conversationCalls("kid001"))
	d.keys("G")
	calls := f.conversationCalls("kid001")[before:]
	if len(calls) != 1 || calls[0].Before != -1 {
		t.Fatalf("G on a cut window should read the tail afresh: %+v", calls)
	}
	if c.newer || c.older != true || len(c.msgs) != convoPageSize || c.last() != int64(n+1) {
		t.Fatalf("after G: %d entries up to %d (newer %v)", len(c.msgs), c.last(), c.newer)
	}
	d.mustShow("while reading back")
	if !d.m.detail.follow {
		t.Fatal("G follows")
	}
}

func TestConversationReadsForwardIntoACutWindow(t *testing.T) {
	const n = maxConversation + 1500
	f := bigConvo(n)
	d := newDriver(t, f, 80, 300) // long pages: fewer keys to read through
	d.selectTask("kid001")
	d.keys("tab")
	for i := 0; i < 20 && d.m.detail.convo.older; i++ {
		d.keys("g")
	}
	c := &d.m.detail.convo
	if !c.newer {
		t.Fatal("the window should be cut")
	}
	cut := c.last()
	// Live output meanwhile waits in the stash.
	m := agentEntry("kid001", n+1, "live while cut", testNow)
	f.addMessages("kid001", m)
	f.push(core.Event{Type: core.EventMessageAdded, TaskID: "kid001", Message: &m})
	d.settle()
	before := len(f.conversationCalls("kid001"))
	for i := 0; i < 3000 && c.newer; i++ {
		d.send(keyMsg("pgdown"))
		d.settle()
	}
	if c.newer {
		t.Fatalf("reading down never joined the newest entries (last %d)", c.last())
	}
	calls := f.conversationCalls("kid001")[before:]
	if len(calls) == 0 || calls[0].After != cut {
		t.Fatalf("forward reads should start at the cut (%d): %+v", cut, calls)
	}
	if len(c.msgs) > maxConversation || !c.older || c.last() != int64(n+1) || len(c.stash) != 0 {
		t.Fatalf("after reading forward: %d entries up to %d, stash %d", len(c.msgs), c.last(), len(c.stash))
	}
	d.seqs()
	d.keys("G")
	d.mustShow("live while cut")
}

func TestConversationReloadKeepsThePlace(t *testing.T) {
	f := bigConvo(1210)
	d := newDriver(t, f, 80, 24)
	d.selectTask("kid001")
	d.keys("tab", "g") // reads back one page; the view shows entry 710 on top
	top := d.logTop()
	// Missed while the stream lagged: an update inside the window and new
	// entries; the daemon says to resync.
	f.mu.Lock()
	f.convo["kid001"][800-1].Text, f.convo["kid001"][800-1].UpdatedAt = "entry 800 edited", testNow.Add(time.Minute)
	f.mu.Unlock()
	f.addMessages("kid001", entries("kid001", 1211, 1300)...)
	before := len(f.conversationCalls("kid001"))
	f.push(core.Event{Type: core.EventResync})
	d.settle()
	calls := f.conversationCalls("kid001")[before:]
	if len(calls) == 0 || calls[0].After != 210 {
		t.Fatalf("a reload while reading back reads the window forward from its start: %+v", calls)
	}
	if got := d.logTop(); got != top {
		t.Fatalf("the view moved on reload: %q, was %q", got, top)
	}
	c := &d.m.detail.convo
	if c.msgs[800-211].Text != "entry 800 edited" {
		t.Fatalf("the reload should refresh the window: %q", c.msgs[800-211].Text)
	}
	d.keys("G")
	d.mustShow("entry 1300")

	// Following, a reload is one tail request.
	before = len(f.conversationCalls("kid001"))
	f.push(core.Event{Type: core.EventResync})
	d.settle()
	if calls := f.conversationCalls("kid001")[before:]; len(calls) != 1 || calls[0].Before != -1 {
		t.Fatalf("a reload while following reads the tail: %+v", calls)
	}
}

func TestConversationOlderPageErrorRetries(t *testing.T) {
	f := bigConvo(800)
	d := newDriver(t, f, 80, 24)
	d.selectTask("kid001")
	f.setErr("Conversation", &core.Error{Code: core.CodeUnavailable, Message: "daemon busy"})
	d.keys("tab", "g")
	d.mustShow("↑ older entries: UNAVAILABLE: daemon busy (↑ retries)")
	n := len(f.conversationCalls("kid001"))
	d.settle()
	if len(f.conversationCalls("kid001")) != n {
		t.Fatal("a failed read must not retry by itself")
	}
	f.setErr("Conversation", nil)
	d.keys("k")
	if top := d.logTop(); !strings.HasSuffix(top, "entry 300") || d.m.detail.convo.first() != 1 {
		t.Fatalf("the retry should load the page before and keep the view: top %q", top)
	}
	d.keys("g")
	d.mustShow("── beginning of conversation ──")
}

func TestConversationEmptyThenLive(t *testing.T) {
	f := newFake(demoTasks()...)
	d := newDriver(t, f, 80, 24)
	d.selectTask("kid001")
	if calls := f.conversationCalls("kid001"); len(calls) != 1 || calls[len(calls)-1].Before != -1 {
		t.Fatalf("calls %+v", calls)
	}
	d.mustNotShow("beginning of conversation")
	m := agentEntry("kid001", 1, "first words", testNow)
	f.addMessages("kid001", m)
	f.push(core.Event{Type: core.EventMessageAdded, TaskID: "kid001", Message: &m})
	d.settle()
	d.mustShow("── beginning of conversation ──", "first words")
}

// The window's own rules, without the model: a stash that overflows keeps
// the window cut until a page read after it reaches the newest entry, and
// pages out of order still merge by sequence number.
func TestConversationWindowRules(t *testing.T) {
	var c conversation
	c.reset("t1")
	c.addTail(api.ConversationPage{Messages: entries("t1", 101, 200), First: 101, Next: 200, Older: true})
	if !c.loaded || !c.older || c.newer || c.first() != 101 {
		t.Fatalf("after the tail: loaded %v older %v newer %v first %d", c.loaded, c.older, c.newer, c.first())
	}
	// Cut at the newest end (as reading back does), then more live
	// entries than the stash holds.
	c.newer = true
	for i := 201; i <= 200+maxConversation+1; i++ {
		c.live(agentEntry("t1", i, "live", testNow), true)
	}
	if !c.stashLost || c.stash != nil || c.last() != 200 {
		t.Fatalf("stash overflow: lost %v, %d stashed, last %d", c.stashLost, len(c.stash), c.last())
	}
	// A page that was asked for before the overflow cannot close the gap.
	if !c.addNewer(200, api.ConversationPage{Messages: entries("t1", 201, 300), Next: 300, More: false}, false) || !c.newer {
		t.Fatal("a page read while the stash lost entries must leave the window cut")
	}
	c.startNewer()
	if c.stashLost {
		t.Fatal("a new read starts the stash afresh")
	}
	c.live(agentEntry("t1", 9000, "after the read began", testNow), true)
	c.addNewer(300, api.ConversationPage{Messages: entries("t1", 301, 400), Next: 400}, false)
	if c.newer || c.last() != 9000 || len(c.stash) != 0 {
		t.Fatalf("the last page joins the stash: newer %v last %d stash %d", c.newer, c.last(), len(c.stash))
	}
	// An older page out of order still merges, in order.
	page := entries("t1", 51, 100)
	page[0], page[len(page)-1] = page[len(page)-1], page[0]
	c.addOlder(101, api.ConversationPage{Messages: page, First: 51, Next: 100, Older: false}, false)
	for i := 1; i < len(c.msgs); i++ {
		if c.msgs[i].Seq <= c.msgs[i-1].Seq {
			t.Fatalf("out of order at %d: %d after %d", i, c.msgs[i].Seq, c.msgs[i-1].Seq)
		}
	}
	if c.older || c.first() != 51 {
		t.Fatalf("after the first page: older %v first %d", c.older, c.first())
	}
	// A page for a window that moved meanwhile is dropped.
	c.addOlder(999, api.ConversationPage{Messages: entries("t1", 1, 5), Older: false}, false)
	if c.first() != 51 {
		t.Fatal("a page that no longer joins the window must be dropped")
	}
}

// An append event grows its entry in place (ADR 0050); the same append
// again changes nothing; an append that does not join what the window
// holds (one was missed) reads the entry again, whole.
func TestConversationAppendsStreamedText(t *testing.T) {
	f := bigConvo(10)
	d := newDriver(t, f, 80, 24)
	d.selectTask("kid001")
	later := testNow.Add(time.Minute)
	grow := core.MessageAppend{Seq: 10, TaskID: "kid001", Kind: core.MsgAgent, Offset: len("entry 10"), Text: " and more", UpdatedAt: later}
	f.push(core.Event{Type: core.EventMessageAppended, TaskID: "kid001", Append: &grow})
	d.settle()
	d.mustShow("entry 10 and more")
	f.push(core.Event{Type: core.EventMessageAppended, TaskID: "kid001", Append: &grow})
	d.settle()
	c := &d.m.detail.convo
	if got := c.msgs[len(c.msgs)-1].Text; got != "entry 10 and more" {
		t.Fatalf("an append seen twice was applied twice: %q", got)
	}
	before := len(f.conversationCalls("kid001"))
	f.mu.Lock()
	f.convo["kid001"][9] = agentEntry("kid001", 10, "entry 10 and more, missed, then the rest", later.Add(time.Second))
	f.mu.Unlock()
	gap := core.MessageAppend{Seq: 10, TaskID: "kid001", Kind: core.MsgAgent, Offset: len("entry 10 and more, missed,"),
		Text: " then the rest", UpdatedAt: later.Add(time.Second)}
	f.push(core.Event{Type: core.EventMessageAppended, TaskID: "kid001", Append: &gap})
	d.settle()
	calls := f.conversationCalls("kid001")
	if len(calls) != before+1 || calls[before].After != 9 || calls[before].Limit != 1 {
		t.Fatalf("a gap should read the entry again (After 9, Limit 1): %+v", calls[before:])
	}
	d.mustShow("entry 10 and more, missed, then the rest")
}
