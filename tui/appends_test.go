package tui

import (
	"slices"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// following is the appends filter of the stream the model follows.
func (d *driver) following() (opened, appends string) {
	d.f.mu.Lock()
	defer d.f.mu.Unlock()
	for _, s := range d.f.streams {
		if (<-chan core.Event)(s.ch) == d.m.events {
			return s.opened, s.appends
		}
	}
	d.t.Fatal("the model follows no stream of the fake's")
	return "", ""
}

// runAll runs cmd and what its batches hold, one command at a time,
// returning each command's message with the calls it made.
func runAll(t *testing.T, f *fakeClient, cmd tea.Cmd) (msgs []tea.Msg, calls [][]string) {
	t.Helper()
	if cmd == nil {
		return nil, nil
	}
	done := make(chan tea.Msg, 1)
	f.mu.Lock()
	before := len(f.calls)
	f.mu.Unlock()
	go func() { done <- cmd() }()
	var msg tea.Msg
	select {
	case msg = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a command did not return")
	}
	if b, ok := msg.(tea.BatchMsg); ok {
		for _, c := range b {
			m, cs := runAll(t, f, c)
			msgs, calls = append(msgs, m...), append(calls, cs...)
		}
		return msgs, calls
	}
	f.mu.Lock()
	made := slices.Clone(f.calls[before:])
	f.mu.Unlock()
	return []tea.Msg{msg}, [][]string{made}
}

// TestStreamFollowsTheShownConversationsAppends: the stream opens with no
// task's appends (issue 26); loading a conversation moves the filter to
// its task in the command that reads the page, before it; a pane that
// shows no conversation follows none.
func TestStreamFollowsTheShownConversationsAppends(t *testing.T) {
	f := newFake(demoTasks()...)
	f.convo = demoConvo()
	d := newDriver(t, f, 100, 30)
	if opened, _ := d.following(); opened != api.AppendsNone {
		t.Fatalf("the stream opened following %q, want none", opened)
	}
	// The first conversation may be read before the stream names its
	// subscription (the listing and the first events race); it is read
	// again once the filter moved.
	f.mu.Lock()
	f.unfollowed = nil
	f.mu.Unlock()
	d.selectTask("kid001")
	if _, now := d.following(); now != "kid001" {
		t.Fatalf("showing kid001, the stream follows %q", now)
	}

	// One step at a time: the selection moves, the debounced load comes,
	// and its command moves the filter, then reads the page.
	_, cmd := d.m.Update(keyMsg("j"))
	next := d.m.tree.selected
	if next == "kid001" || next == "" {
		t.Fatalf("j selected %q", next)
	}
	msgs, calls := runAll(t, f, cmd)
	var load tea.Msg
	for _, m := range msgs {
		if l, ok := m.(convoLoadMsg); ok {
			load = l
		}
	}
	if load == nil {
		t.Fatalf("moving the selection did not ask for a load: %v, calls %v", msgs, calls)
	}
	_, cmd = d.m.Update(load)
	msgs, calls = runAll(t, f, cmd)
	want := []string{"FollowAppends sub1 " + next, "Conversation " + next}
	found := false
	for i, m := range msgs {
		am, ok := m.(appendsMsg)
		if !ok {
			continue
		}
		found = true
		if !slices.Equal(calls[i], want) {
			t.Fatalf("the load's command made %v, want %v", calls[i], want)
		}
		if p, ok := am.then.(convoPageMsg); !ok || p.taskID != next {
			t.Fatalf("the move was followed by %#v, not %s's page", am.then, next)
		}
	}
	if !found {
		t.Fatalf("the load did not move the filter: %v, calls %v", msgs, calls)
	}
	for _, m := range msgs {
		d.send(m)
	}
	d.settle()
	d.mustShow(d.m.tasks.get(next).Title)

	// Back to kid001 through the driver: moved again, and no page read
	// before the move (the fake notes one).
	d.selectTask("kid001")
	if _, now := d.following(); now != "kid001" {
		t.Fatalf("back on kid001, the stream follows %q", now)
	}
	if len(f.unfollowed) != 0 {
		t.Fatalf("conversations read before the stream followed them: %v; calls %v", f.unfollowed, f.calls)
	}

	// A filter matching no task: no conversation shown, no appends.
	d.keys("/")
	d.typeText("zzzz-no-such-task")
	d.keys("enter")
	if d.m.detail.convo.taskID != "" {
		t.Fatalf("the filter left %q shown", d.m.detail.convo.taskID)
	}
	if _, now := d.following(); now != "" {
		t.Fatalf("no conversation shown, the stream follows %q", now)
	}
	if last := f.calls[len(f.calls)-1]; last != "FollowAppends sub1 " {
		t.Errorf("the last call is %q, not the move to none: %v", last, f.calls)
	}
}

// TestReconnectFollowsTheShownConversation: the stream that replaces a
// lost one opens following the conversation shown; one shown only after
// it was asked for gets the filter moved when it names its subscription.
func TestReconnectFollowsTheShownConversation(t *testing.T) {
	f := newFake(demoTasks()...)
	f.convo = demoConvo()
	d := newDriver(t, f, 100, 30)
	d.selectTask("kid001")
	f.endStream()
	d.settle()
	d.send(reconnectMsg{gen: d.m.gen})
	d.settle()
	if d.m.conn != connLive {
		t.Fatalf("not reconnected: %v", d.m.conn)
	}
	opened, now := d.following()
	if opened != "kid001" || now != "kid001" {
		t.Fatalf("the new stream opened following %q, follows %q; want kid001", opened, now)
	}

	// The selection moves while the stream is being asked for.
	f.endStream()
	d.settle()
	_, cmd := d.m.Update(reconnectMsg{gen: d.m.gen})
	msgs, _ := runAll(t, f, cmd) // the stream opens following kid001
	d.selectTask("root01")
	for _, m := range msgs {
		d.send(m)
	}
	d.settle()
	if _, now := d.following(); now != "root01" {
		t.Fatalf("showing root01, the new stream follows %q", now)
	}
	// root01 was read before the stream named its subscription; it is
	// read again after the move.
	moved, read := slices.Index(f.calls, "FollowAppends sub3 root01"), -1
	for i, c := range f.calls {
		if c == "Conversation root01" {
			read = i
		}
	}
	if moved < 0 || read < moved {
		t.Fatalf("the third stream was not moved to root01 before its page was read: %v", f.calls)
	}
}
