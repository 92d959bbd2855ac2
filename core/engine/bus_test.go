package engine

import (
	"sync"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

func appendEv(task string) core.Event {
	return core.Event{Type: core.EventMessageAppended, TaskID: task, Append: &core.MessageAppend{TaskID: task, Text: "x"}}
}

// ready drains what a subscription holds now (Publish delivers before it
// returns).
func ready(ch <-chan core.Event) []core.Event {
	var evs []core.Event
	for {
		select {
		case ev := <-ch:
			evs = append(evs, ev)
		default:
			return evs
		}
	}
}

func kinds(evs []core.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, string(ev.Type)+":"+ev.TaskID)
	}
	return out
}

func sameKinds(t *testing.T, who string, got []core.Event, want ...string) {
	t.Helper()
	g := kinds(got)
	if len(g) != len(want) {
		t.Errorf("%s got %v, want %v", who, g, want)
		return
	}
	for i := range g {
		if g[i] != want[i] {
			t.Errorf("%s got %v, want %v", who, g, want)
			return
		}
	}
}

// A subscription's appends filter passes every task's appends (the
// default), none, or one task's; every other event passes whatever it is.
func TestBusAppendsFilter(t *testing.T) {
	b := newBus()
	all, cancelAll := b.Subscribe("")
	defer cancelAll()
	_, none, cancelNone := b.SubscribeAppends("", Appends{})
	defer cancelNone()
	_, one, cancelOne := b.SubscribeAppends("", AppendsOf("a"))
	defer cancelOne()
	_, asked, cancelAsked := b.SubscribeAppends("", AppendsOf(api.AppendsNone))
	defer cancelAsked()
	// A task's own stream filters its appends the same way.
	_, taskNone, cancelTask := b.SubscribeAppends("a", Appends{})
	defer cancelTask()

	b.Publish(appendEv("a"))
	b.Publish(appendEv("b"))
	b.Publish(core.Event{Type: core.EventTaskUpdated, TaskID: "b"})
	b.Publish(core.Event{Type: core.EventMessageAdded, TaskID: "a"})
	b.Publish(core.Event{Type: core.EventMessageUpdated, TaskID: "b"})
	b.Publish(core.Event{Type: core.EventProfileChanged})

	sameKinds(t, "all", ready(all), "message.appended:a", "message.appended:b", "task.updated:b", "message.added:a", "message.updated:b", "profile.changed:")
	sameKinds(t, "none", ready(none), "task.updated:b", "message.added:a", "message.updated:b", "profile.changed:")
	sameKinds(t, "none asked", ready(asked), "task.updated:b", "message.added:a", "message.updated:b", "profile.changed:")
	sameKinds(t, "one", ready(one), "message.appended:a", "task.updated:b", "message.added:a", "message.updated:b", "profile.changed:")
	sameKinds(t, "task a, none", ready(taskNone), "message.added:a")
}

// SetAppends moves the filter from the next event on; an unknown id, or
// one whose subscription ended, is refused.
func TestBusSetAppends(t *testing.T) {
	b := newBus()
	id, ch, cancel := b.SubscribeAppends("", Appends{})
	b.Publish(appendEv("a"))
	if !b.SetAppends(id, Appends{Task: "a"}) {
		t.Fatal("SetAppends refused a live subscription")
	}
	b.Publish(appendEv("a"))
	b.Publish(appendEv("b"))
	if !b.SetAppends(id, Appends{Task: "b"}) {
		t.Fatal("SetAppends refused a live subscription")
	}
	b.Publish(appendEv("a"))
	b.Publish(appendEv("b"))
	b.SetAppends(id, Appends{})
	b.Publish(appendEv("b"))
	sameKinds(t, "moved", ready(ch), "message.appended:a", "message.appended:b")

	other, _, cancelOther := b.SubscribeAppends("", AllAppends)
	defer cancelOther()
	if other == id {
		t.Fatalf("two subscriptions share the id %q", id)
	}
	if b.SetAppends("nosuch", Appends{}) {
		t.Error("SetAppends accepted an unknown id")
	}
	cancel()
	if b.SetAppends(id, Appends{Task: "a"}) {
		t.Error("SetAppends accepted an ended subscription's id")
	}
}

// Filtered appends take no room in the subscriber's buffer: a follower of
// one conversation does not lag, nor resync, behind the others' output.
func TestBusFilteredAppendsSpendNoBuffer(t *testing.T) {
	b := newBus()
	_, none, cancelNone := b.SubscribeAppends("", Appends{})
	defer cancelNone()
	_, one, cancelOne := b.SubscribeAppends("", Appends{Task: "a"})
	defer cancelOne()
	for range subscriberBuffer + 10 {
		b.Publish(appendEv("b"))
	}
	b.Publish(appendEv("a"))
	b.Publish(core.Event{Type: core.EventTaskUpdated, TaskID: "b"})
	sameKinds(t, "none", ready(none), "task.updated:b")
	sameKinds(t, "one", ready(one), "message.appended:a", "task.updated:b")
}

// The filter changes while others publish (go test -race): once
// SetAppends returns, every later append is the new task's.
func TestBusSetAppendsWhilePublishing(t *testing.T) {
	b := newBus()
	id, ch, cancel := b.SubscribeAppends("", Appends{})
	var got []core.Event
	read := make(chan struct{})
	go func() {
		defer close(read)
		for ev := range ch {
			got = append(got, ev)
		}
	}()
	// Fewer events in all than the buffer holds: the reader cannot lag.
	var wg sync.WaitGroup
	for _, task := range []string{"a", "b", "c"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				b.Publish(appendEv(task))
			}
		}()
	}
	for i := range 200 {
		b.SetAppends(id, Appends{Task: []string{"a", "b", "c", ""}[i%4]})
	}
	b.SetAppends(id, Appends{Task: "b"})
	b.Publish(core.Event{Type: core.EventTaskUpdated, TaskID: "mark"})
	for range 200 {
		b.Publish(appendEv("a"))
		b.Publish(appendEv("b"))
	}
	wg.Wait()
	cancel()
	<-read
	marked, after := false, 0
	for _, ev := range got {
		switch {
		case ev.Type == core.EventResync:
			t.Fatal("the subscriber lagged")
		case ev.Type == core.EventTaskUpdated:
			marked = true
		case marked && ev.TaskID != "b":
			t.Fatalf("after the filter moved to b, an append of %s arrived", ev.TaskID)
		case marked:
			after++
		}
	}
	if !marked || after < 200 {
		t.Fatalf("marked %v, %d appends of b after it; want the mark and at least 200", marked, after)
	}
}
