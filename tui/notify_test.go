package tui

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
)

// bellBox records the bells the model sends.
type bellBox struct {
	mu    sync.Mutex
	bells int
}

func (b *bellBox) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bells += strings.Count(string(p), "\a")
	return len(p), nil
}

func (b *bellBox) counts() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bells
}

func notifyDriver(t *testing.T, noBell bool, tasks ...core.Task) (*driver, *bellBox) {
	box := &bellBox{}
	d := newDriver(t, newFake(tasks...), 100, 30, func(o *Options) {
		o.Bell, o.NoBell = box, noBell
	})
	return d, box
}

// The daemon's needs-you event rings the bell once and flashes the status
// line; the changes themselves (a session change, a question for the
// parent, a task coming back to you) ring nothing: the daemon decides
// when a task starts needing you (core/engine startsNeedingYou).
func TestNotifiesWhenATaskNeedsYou(t *testing.T) {
	work := core.Task{ID: "work01", Title: "Refactor the parser", Status: core.StatusInProgress, Profile: "mock",
		CreatedAt: ago(time.Hour), UpdatedAt: ago(time.Minute), Assignee: &core.Ref{Kind: "role", Name: "mock"},
		Session: session("work01", core.SessionRunning, ago(time.Minute))}
	kid := core.Task{ID: "kid009", Title: "Pick a name", ParentID: "work01", Status: core.StatusInProgress, Profile: "mock",
		CreatedAt: ago(time.Hour), UpdatedAt: ago(time.Minute), Session: session("kid009", core.SessionRunning, ago(time.Minute))}
	d, box := notifyDriver(t, false, work, kid)
	quiet := func(what string) {
		t.Helper()
		if bells := box.counts(); bells != 0 {
			t.Fatalf("%s: %d bells; want none", what, bells)
		}
		d.mustNotShow("needs you", "asks you a question")
	}
	quiet("at start")

	s := session("work01", core.SessionWaitingForInput, ago(0))
	d.f.push(core.Event{Type: core.EventSessionUpdated, TaskID: "work01", Session: s})
	d.f.push(core.Event{Type: core.EventQuestionUpdated, TaskID: "kid009", Question: parentQuestion("q-p1", "work01")})
	back := work
	back.Assignee, back.YourTurn = &core.Ref{Kind: "person", Name: core.Operator}, true
	back.Stalled = &core.Stall{Reason: core.StallReturned, From: core.ParseBy("role:mock"), Detail: "done", At: ago(0)}
	d.f.push(core.Event{Type: core.EventTaskUpdated, TaskID: "work01", Task: &back})
	d.settle()
	quiet("after changes the daemon did not mark")

	d.f.push(core.Event{Type: core.EventNeedsYou, TaskID: "work01", Task: &back})
	d.settle()
	d.mustShow("task work01 needs you: Refactor the parser")
	if bells := box.counts(); bells != 1 {
		t.Fatalf("after the needs-you event: %d bells; want one", bells)
	}

	asks := back
	asks.PendingQuestion = userQuestion("q-u1", core.QuestionItem{Prompt: "Which DB?"})
	d.f.push(core.Event{Type: core.EventNeedsYou, TaskID: "work01", Task: &asks})
	d.settle()
	d.mustShow("task work01 asks you a question")
	if bells := box.counts(); bells != 2 {
		t.Fatalf("after a ?you question: %d bells; want two", bells)
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
	q.PendingQuestion = userQuestion("q-u2", core.QuestionItem{Prompt: "ok?"})
	d.f.push(core.Event{Type: core.EventNeedsYou, TaskID: "ask009", Task: &q})
	d.settle()
	d.mustShow("task ask009 asks you a question")
	if bells := box.counts(); bells != 0 {
		t.Fatalf("with no bell: %d bells; want none", bells)
	}
}

// Options.Notice (the runs the daemon the UI started resumed) is said on
// the status line at start, once, and ends by itself.
func TestStartNoticeShowsOnce(t *testing.T) {
	notice := `started the kandev daemon (pid 7); it resumed 1 interrupted run: work01 "Refactor"`
	d := newDriver(t, newFake(), 120, 30, func(o *Options) { o.Notice = notice })
	d.mustShow("» started the kandev daemon (pid 7); it resumed 1 interrupted run: work01")
	d.send(flashEndMsg{text: notice})
	d.mustNotShow("it resumed")
}
