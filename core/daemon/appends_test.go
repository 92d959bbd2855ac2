package daemon_test

import (
	"context"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// nextEvent is the stream's next event; the test fails if it ends first.
func nextEvent(t *testing.T, events <-chan core.Event) core.Event {
	t.Helper()
	ev, ok := <-events
	if !ok {
		t.Fatal("the event stream ended")
	}
	return ev
}

// upToMark reads the stream until the task.created of mark, and returns
// the tasks whose appends came before it.
func upToMark(t *testing.T, events <-chan core.Event, mark string) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for {
		ev := nextEvent(t, events)
		switch {
		case ev.Type == core.EventMessageAppended:
			seen[ev.TaskID]++
		case ev.Type == core.EventTaskCreated && ev.TaskID == mark:
			return seen
		case ev.Type == core.EventResync:
			t.Fatal("the stream lagged")
		}
	}
}

// appendsOf reads the stream until n appends of want have come, failing
// at an append of another task.
func appendsOf(t *testing.T, events <-chan core.Event, want string, n int) {
	t.Helper()
	for got := 0; got < n; {
		ev := nextEvent(t, events)
		if ev.Type != core.EventMessageAppended {
			continue
		}
		if ev.TaskID != want {
			t.Fatalf("an append of %s came, following %s alone", ev.TaskID, want)
		}
		got++
	}
}

// TestEventsFollowAppends: a stream opened with no appends gets the
// other events and none of the appends of two streaming tasks; moved to
// one task with FollowAppends, it gets that task's alone, then the
// other's. Its id dies with the stream; an unknown one is not found.
func TestEventsFollowAppends(t *testing.T) {
	d := daemontest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	defer cancel()
	// The other followers' default: every append (task log --follow,
	// kandev events).
	all, err := d.Client.Events(ctx, api.EventsInput{})
	if err != nil {
		t.Fatal(err)
	}
	sctx, endStream := context.WithCancel(ctx)
	defer endStream()
	events, err := d.Client.Events(sctx, api.EventsInput{Appends: api.AppendsNone})
	if err != nil {
		t.Fatal(err)
	}
	first := nextEvent(t, events)
	if first.Type != core.EventSubscribed || first.Subscription == "" {
		t.Fatalf("the stream opened with %+v, not its subscription", first)
	}
	sub := first.Subscription

	a := create(t, d, api.CreateTaskInput{Title: "a", Prompt: "mock: stream 50 60s", Start: true})
	b := create(t, d, api.CreateTaskInput{Title: "b", Prompt: "mock: stream 50 60s", Start: true})
	// Both stream: the unfiltered stream has their appends.
	seen := map[string]bool{}
	for !seen[a.ID] || !seen[b.ID] {
		if ev := nextEvent(t, all); ev.Type == core.EventMessageAppended {
			seen[ev.TaskID] = true
		}
	}
	mark := create(t, d, api.CreateTaskInput{Title: "mark 1"})
	if got := upToMark(t, events, mark.ID); len(got) != 0 {
		t.Fatalf("a stream following no appends got %v", got)
	}

	if err := d.Client.FollowAppends(ctx, sub, a.ID); err != nil {
		t.Fatal(err)
	}
	appendsOf(t, events, a.ID, 5)

	if err := d.Client.FollowAppends(ctx, sub, b.ID); err != nil {
		t.Fatal(err)
	}
	// Appends of a published before the move may still be on their way;
	// none after the mark, published after it.
	mark = create(t, d, api.CreateTaskInput{Title: "mark 2"})
	upToMark(t, events, mark.ID)
	appendsOf(t, events, b.ID, 5)

	if err := d.Client.FollowAppends(ctx, sub, ""); err != nil {
		t.Fatal(err)
	}
	// Past a first mark, everything was published after the move.
	mark = create(t, d, api.CreateTaskInput{Title: "mark 3"})
	upToMark(t, events, mark.ID)
	mark = create(t, d, api.CreateTaskInput{Title: "mark 4"})
	if got := upToMark(t, events, mark.ID); len(got) != 0 {
		t.Fatalf("following no appends again, the stream got %v", got)
	}

	err = d.Client.FollowAppends(ctx, "nosuch", a.ID)
	if err == nil || core.AsError(err).Code != core.CodeNotFound {
		t.Fatalf("an unknown subscription: err = %v, want not found", err)
	}
	endStream()
	daemontest.Eventually(t, wait, "the ended stream's subscription to be gone", func() bool {
		err := d.Client.FollowAppends(ctx, sub, a.ID)
		return err != nil && core.AsError(err).Code == core.CodeNotFound
	})
}
