package tui

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
)

// bellBox records the bells and desktop notifications the model sends.
type bellBox struct {
	mu       sync.Mutex
	bells    int
	notified []string
}

func (b *bellBox) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bells += strings.Count(string(p), "\a")
	return len(p), nil
}

func (b *bellBox) notify(_ context.Context, _, body string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.notified = append(b.notified, body)
}

func (b *bellBox) counts() (int, []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bells, append([]string(nil), b.notified...)
}

func notifyDriver(t *testing.T, noBell bool, tasks ...core.Task) (*driver, *bellBox) {
	box := &bellBox{}
	d := newDriver(t, newFake(tasks...), 100, 30, func(o *Options) {
		o.Bell, o.NoBell, o.Notify = box, noBell, box.notify
	})
	return d, box
}

// A task that becomes yours, and a ?you question, ring the bell once each,
// flash the status line and notify the desktop; a running session, a
// question for the parent, and a task already yours changing again do not.
func TestNotifiesWhenATaskNeedsYou(t *testing.T) {
	work := core.Task{ID: "work01", Title: "Refactor the parser", Status: core.StatusInProgress, Profile: "mock",
		CreatedAt: ago(time.Hour), UpdatedAt: ago(time.Minute), Assignee: &core.Ref{Kind: "role", Name: "mock"},
		Session: session("work01", core.SessionRunning, ago(time.Minute))}
	kid := core.Task{ID: "kid009", Title: "Pick a name", ParentID: "work01", Status: core.StatusInProgress, Profile: "mock",
		CreatedAt: ago(time.Hour), UpdatedAt: ago(time.Minute), Session: session("kid009", core.SessionRunning, ago(time.Minute))}
	d, box := notifyDriver(t, false, work, kid)
	quiet := func(what string) {
		t.Helper()
		if bells, n := box.counts(); bells != 0 || len(n) != 0 {
			t.Fatalf("%s: %d bells, notifications %q; want none", what, bells, n)
		}
		d.mustNotShow("needs you", "asks you a question")
	}
	quiet("at start")

	// Not yours: a session change, a question for the parent task.
	s := session("work01", core.SessionWaitingForInput, ago(0))
	d.f.push(core.Event{Type: core.EventSessionUpdated, TaskID: "work01", Session: s})
	d.f.push(core.Event{Type: core.EventQuestionUpdated, TaskID: "kid009", Question: parentQuestion("q-p1", "work01")})
	d.settle()
	quiet("after a session change and a parent question")

	// The task comes back to you.
	back := work
	back.Assignee, back.YourTurn = &core.Ref{Kind: "person", Name: core.Operator}, true
	back.Stalled = &core.Stall{Reason: core.StallReturned, From: "role:mock", Detail: "done", At: ago(0)}
	d.f.push(core.Event{Type: core.EventTaskUpdated, TaskID: "work01", Task: &back})
	d.settle()
	d.mustShow("task work01 needs you: Refactor the parser")
	if bells, n := box.counts(); bells != 1 || len(n) != 1 || !strings.Contains(n[0], "work01") {
		t.Fatalf("after the task became yours: %d bells, notifications %q; want one each", bells, n)
	}
	// Still yours, updated again: no second bell.
	back.Title = "Refactor the parser (v2)"
	d.f.push(core.Event{Type: core.EventTaskUpdated, TaskID: "work01", Task: &back})
	d.settle()
	if bells, _ := box.counts(); bells != 1 {
		t.Fatalf("an update of a task already yours rang again: %d bells", bells)
	}

	// A ?you question rings, even on a task already yours.
	d.f.push(core.Event{Type: core.EventQuestionUpdated, TaskID: "work01", Question: userQuestion("q-u1", core.QuestionItem{Prompt: "Which DB?"})})
	d.settle()
	d.mustShow("task work01 asks you a question")
	if bells, n := box.counts(); bells != 2 || len(n) != 2 {
		t.Fatalf("after a ?you question: %d bells, notifications %q; want two each", bells, n)
	}
	// The flash ends by itself.
	d.send(flashEndMsg{text: d.m.flash})
	d.mustNotShow("asks you a question")
}

// KANDEV_NO_BELL (Options.NoBell) silences the bell but keeps the flash.
func TestNoBellKeepsTheFlash(t *testing.T) {
	q := core.Task{ID: "ask009", Title: "Ask me", Status: core.StatusInProgress, Profile: "mock",
		CreatedAt: ago(time.Hour), UpdatedAt: ago(time.Minute), Session: session("ask009", core.SessionRunning, ago(time.Minute))}
	d, box := notifyDriver(t, true, q)
	d.f.push(core.Event{Type: core.EventQuestionUpdated, TaskID: "ask009", Question: userQuestion("q-u2", core.QuestionItem{Prompt: "ok?"})})
	d.settle()
	d.mustShow("task ask009 asks you a question")
	if bells, n := box.counts(); bells != 0 || len(n) != 1 {
		t.Fatalf("with no bell: %d bells, notifications %q; want no bell and one notification", bells, n)
	}
}
