package tui

import (
	"testing"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

func queuedFlood(f *fakeClient) {
	f.queue["kid001"] = []api.QueuedItem{
		{ID: 41, Kind: "message", Sender: core.ParseBy("person:operator"), Interrupt: true, Text: "stop and rebase first", QueuedAt: testNow},
		{ID: 57, Kind: "message", Sender: core.ParseBy("task:spam01"), Text: "buy my\x1b]52;c;aGk=\x07 tool", QueuedAt: testNow},
		{ID: 58, Kind: "message", Sender: core.ParseBy("task:spam01"), Text: "buy it again", QueuedAt: testNow},
	}
}

// Q opens the selected task's queue; x drops the chosen item by its queue
// id, X drops all; esc closes. A refusal stays in the dialog.
func TestQueueDialog(t *testing.T) {
	f := newFake(demoTasks()...)
	queuedFlood(f)
	d := newDriver(t, f, 80, 24)
	d.selectTask("kid001")
	d.keys("Q")
	d.mustShow("Queue of task kid001", "1. message!", "you", "2. message", "task spam01", "buy my tool")
	d.keys("j", "x")
	if f.callCount("DropQueued kid001 57 false") != 1 {
		t.Fatalf("calls %v", f.calls)
	}
	d.mustShow("dropped 1 item(s)", "buy it again")
	d.mustNotShow("buy my tool")
	f.setErr("DropQueued", &core.Error{Code: core.CodeForbidden, Message: "only the operator drops queued messages"})
	d.keys("X")
	d.mustShow("refused", "only the operator drops")
	f.setErr("DropQueued", nil)
	d.keys("X")
	if f.callCount("DropQueued kid001 0 true") != 2 {
		t.Fatalf("calls %v", f.calls)
	}
	d.mustShow("Nothing queued.")
	d.keys("esc")
	if d.m.dialog != nil {
		t.Fatal("esc closes the queue")
	}
}

func TestGoldenQueueDialog(t *testing.T) {
	f := newFake(demoTasks()...)
	queuedFlood(f)
	g := goldenProgram(t, f, 80, 24)
	g.waitScreen("7 tasks")
	g.keys("j", "Q")
	g.waitScreen("Queue of task kid001", "buy it again")
	golden.RequireEqual(t, g.finalScreen())
}
