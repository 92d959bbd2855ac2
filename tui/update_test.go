package tui

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

func TestLoadShowsTreeWithBadges(t *testing.T) {
	d := newDriver(t, newFake(demoTasks()...), 80, 24)
	if n := d.f.callCount("Events"); n != 1 {
		t.Fatalf("Events called %d times", n)
	}
	d.mustShow("● live", "7 tasks · 1 running (+1 paused on you) · ?you 1 · ?parent 1") // ask001 waits on you: its agent is up, its turn paused, not running
	for id, want := range map[string][]string{
		"root01": {"AUTO"},
		"kid001": {"AUTO", "├─"},
		"kid002": {"AUTO", "?parent"},
		"kid003": {"FAILED", "└─"},
		"ask001": {"?you", "…"},
		"stop01": {"STOPPED"},
		"done01": {"✓", "日本語"},
	} {
		row := d.rowOf(id)
		for _, w := range want {
			if !strings.Contains(row, w) {
				t.Errorf("row of %s lacks %q: %q", id, w, row)
			}
		}
	}
	if row := d.rowOf("root01"); strings.Contains(row, "?you") || strings.Contains(row, "?parent") {
		t.Errorf("root row has a question badge: %q", row)
	}
}

func TestEveryLineFitsTheScreen(t *testing.T) {
	wide := core.Task{ID: "wide01", Title: strings.Repeat("長いタイトル with words ", 20), Description: strings.Repeat("説明 description ", 80),
		Status: core.StatusTodo, Profile: "mock", CreatedAt: testNow, UpdatedAt: testNow}
	for _, size := range [][2]int{{80, 24}, {100, 30}, {200, 50}, {120, 40}} {
		f := newFake(append(demoTasks(), wide)...)
		f.convo = demoConvo()
		d := newDriver(t, f, size[0], size[1])
		d.selectTask("ask001")
		check := func(what string) {
			lines := strings.Split(d.view(), "\n")
			if len(lines) != size[1] {
				t.Fatalf("%dx%d %s: %d lines, want %d:\n%s", size[0], size[1], what, len(lines), size[1], d.view())
			}
			for i, l := range lines {
				if w := width(l); w > size[0] {
					t.Fatalf("%dx%d %s: line %d is %d cells wide: %q", size[0], size[1], what, i, w, l)
				}
				if strings.ContainsAny(l, "\x1b\r\t") {
					t.Fatalf("%dx%d %s: line %d has control characters: %q", size[0], size[1], what, i, l)
				}
			}
		}
		check("tree")
		for _, k := range []string{"a", "esc", "s", "n", "esc", "m", "esc", "d", "5", "n", "o", "tab", "esc", "?"} {
			d.keys(k)
			check("after " + k)
		}
		d.keys("esc")
		d.selectTask("wide01")
		check("a wide, wrapped title and description")
	}
}

func TestResizeRelayouts(t *testing.T) {
	d := newDriver(t, newFake(demoTasks()...), 80, 24)
	if d.m.layout().wide {
		t.Fatal("80 columns should stack the panes")
	}
	d.send(resize(200, 50))
	d.settle()
	if !d.m.layout().wide {
		t.Fatal("200 columns should put the panes side by side")
	}
	if got := len(strings.Split(d.view(), "\n")); got != 50 {
		t.Fatalf("%d lines after resize", got)
	}
	d.send(resize(30, 8))
	d.mustShow("bigger", "80×24")
}

func TestLiveEventsUpdateTree(t *testing.T) {
	d := newDriver(t, newFake(demoTasks()...), 100, 30)
	nt := core.Task{ID: "live01", Title: "Appeared live", ParentID: "root01", Status: core.StatusTodo, Autopilot: true, Profile: "mock", CreatedAt: testNow, UpdatedAt: testNow}
	d.f.push(core.Event{Type: core.EventTaskCreated, TaskID: nt.ID, Task: &nt})
	d.settle()
	row := d.rowOf("live01")
	if !strings.Contains(row, "AUTO") || !strings.Contains(row, "└─") {
		t.Fatalf("new child row: %q", row)
	}
	// A user question arrives on it, then it starts running.
	q := userQuestion("q9", core.QuestionItem{Prompt: "Proceed?"})
	d.f.push(core.Event{Type: core.EventQuestionUpdated, TaskID: "live01", Question: q})
	d.settle()
	if !strings.Contains(d.rowOf("live01"), "?you") {
		t.Fatalf("question badge missing: %q", d.rowOf("live01"))
	}
	d.mustShow("?you 2")
	s := session("live01", core.SessionRunning, testNow)
	d.f.push(core.Event{Type: core.EventSessionUpdated, TaskID: "live01", Session: s})
	d.settle()
	d.mustShow("8 tasks · 1 running") // live01 runs but waits on your answer: not counted running
	// The question is answered, the task is archived.
	aq := *q
	aq.Status = core.QuestionAnswered
	d.f.push(core.Event{Type: core.EventQuestionUpdated, TaskID: "live01", Question: &aq})
	d.settle()
	d.mustShow("?you 1")
	arch := nt
	arch.Archived = true
	d.f.push(core.Event{Type: core.EventTaskUpdated, TaskID: "live01", Task: &arch})
	d.settle()
	d.mustNotShow("live01")
}

func TestResyncReloads(t *testing.T) {
	f := newFake(demoTasks()...)
	d := newDriver(t, f, 80, 24)
	f.mu.Lock()
	f.tasks = append(f.tasks, core.Task{ID: "missed", Title: "Missed while lagging", Status: core.StatusTodo, CreatedAt: testNow, UpdatedAt: testNow})
	f.mu.Unlock()
	f.push(core.Event{Type: core.EventResync})
	d.settle()
	if n := f.callCount("ListTasks"); n != 2 {
		t.Fatalf("ListTasks called %d times, want 2", n)
	}
	d.keys("G")
	d.rowOf("missed")
}

func TestResyncDuringLoadReloadsAgain(t *testing.T) {
	f := newFake(demoTasks()...)
	d := newDriver(t, f, 80, 24)
	// A listing is in flight when the resync arrives.
	d.m.loading = true
	d.send(eventsMsg{gen: d.m.gen, events: []core.Event{{Type: core.EventResync}}})
	if f.callCount("ListTasks") != 1 {
		t.Fatal("no second listing while one is in flight")
	}
	d.send(tasksMsg{gen: d.m.gen, tasks: demoTasks()})
	d.settle()
	if n := f.callCount("ListTasks"); n != 2 {
		t.Fatalf("ListTasks called %d times, want 2", n)
	}
}

// TestStoppedDaemonStaysStopped is issue 22's `daemon stop` with the UI
// open: reconnecting by itself, the UI only attaches to a running daemon,
// so a stopped one is not started again behind the operator's back; it
// says the daemon stopped, and R starts it.
func TestStoppedDaemonStaysStopped(t *testing.T) {
	f := newFake(demoTasks()...)
	starts, attaches := 0, 0
	up := false
	d := newDriver(t, f, 80, 24, func(o *Options) {
		o.Reconnect = func(ctx context.Context) (api.Client, error) {
			starts++
			return f, nil
		}
		o.Attach = func(ctx context.Context) (api.Client, error) {
			attaches++
			if !up {
				return nil, ErrNoDaemon
			}
			return f, nil
		}
	})
	d.m.backoff = time.Hour
	f.endStream()
	d.settle()
	d.send(reconnectMsg{gen: d.m.gen})
	d.settle()
	d.mustShow("the daemon stopped", "R starts it again", "R start daemon")
	if starts != 0 || attaches != 1 || d.m.conn != connLost {
		t.Fatalf("after the stream ended: %d starts, %d attaches, state %v", starts, attaches, d.m.conn)
	}
	d.send(reconnectMsg{gen: d.m.gen})
	d.settle()
	if starts != 0 || attaches != 2 {
		t.Fatalf("the UI started a daemon by itself: %d starts, %d attaches", starts, attaches)
	}
	d.keys("R")
	if starts != 1 || d.m.conn != connLive {
		t.Fatalf("R: %d starts, state %v", starts, d.m.conn)
	}
	d.mustShow("● live", "reconnected to the daemon")

	// A daemon someone else starts (kandev daemon restart) is attached to.
	f.endStream()
	d.settle()
	up = true
	d.send(reconnectMsg{gen: d.m.gen})
	d.settle()
	if starts != 1 || d.m.conn != connLive {
		t.Fatalf("a running daemon: %d starts, state %v", starts, d.m.conn)
	}
	d.keys("R")
	d.mustShow("the daemon is running")
}

func TestReconnectsWhenStreamEnds(t *testing.T) {
	f := newFake(demoTasks()...)
	reconnects := 0
	d := newDriver(t, f, 80, 24, func(o *Options) {
		o.Reconnect = func(ctx context.Context) (api.Client, error) {
			reconnects++
			if reconnects == 1 {
				return nil, &core.Error{Code: core.CodeUnavailable, Message: "cannot reach the kandev daemon"}
			}
			return f, nil
		}
	})
	// A long backoff parks the driver's timer: the test fires each retry.
	d.m.backoff = time.Hour
	f.endStream()
	d.settle()
	d.mustShow("daemon connection lost", "the event stream ended")
	if reconnects != 0 || d.m.conn != connLost {
		t.Fatalf("before the backoff: %d reconnects, state %v", reconnects, d.m.conn)
	}
	d.send(reconnectMsg{gen: d.m.gen})
	d.settle()
	d.mustShow("daemon connection lost", "cannot reach the kandev daemon")
	if reconnects != 1 || d.m.conn != connLost {
		t.Fatalf("after the failed retry: %d reconnects, state %v", reconnects, d.m.conn)
	}
	d.send(reconnectMsg{gen: d.m.gen})
	d.settle()
	if reconnects != 2 || d.m.conn != connLive {
		t.Fatalf("reconnected %d times", reconnects)
	}
	d.mustShow("● live", "reconnected to the daemon")
	if n := f.callCount("ListTasks"); n != 2 {
		t.Fatalf("ListTasks called %d times, want 2 (reload after reconnect)", n)
	}
	// The new stream is followed.
	nt := core.Task{ID: "after1", Title: "After restart", Status: core.StatusTodo, CreatedAt: testNow, UpdatedAt: testNow}
	f.push(core.Event{Type: core.EventTaskCreated, Task: &nt})
	d.settle()
	d.keys("G")
	d.rowOf("after1")
}

func TestNavigationAndFolding(t *testing.T) {
	d := newDriver(t, newFake(demoTasks()...), 80, 24)
	if d.m.tree.selected != "root01" {
		t.Fatalf("first selection %q", d.m.tree.selected)
	}
	d.keys("j", "j")
	if d.m.tree.selected != "kid002" {
		t.Fatalf("after jj: %q", d.m.tree.selected)
	}
	d.keys("k")
	if d.m.tree.selected != "kid001" {
		t.Fatalf("after k: %q", d.m.tree.selected)
	}
	d.keys("h") // a leaf: go to the parent
	if d.m.tree.selected != "root01" {
		t.Fatalf("h on a leaf: %q", d.m.tree.selected)
	}
	d.keys("h") // fold
	d.mustShow("[+3]")
	d.mustNotShow("kid001")
	d.keys("l") // unfold
	d.mustShow("kid001")
	d.keys("l") // into the first child
	if d.m.tree.selected != "kid001" {
		t.Fatalf("l on an open parent: %q", d.m.tree.selected)
	}
	d.keys("G")
	if d.m.tree.selected != "done01" {
		t.Fatalf("G: %q", d.m.tree.selected)
	}
	d.keys("g")
	if d.m.tree.selected != "root01" {
		t.Fatalf("g: %q", d.m.tree.selected)
	}
	d.keys("pgdown")
	if d.m.tree.cursor == 0 {
		t.Fatal("pgdown did not move")
	}
}

func TestRunesTypedTogetherAreSeparateKeys(t *testing.T) {
	d := newDriver(t, newFake(demoTasks()...), 80, 24)
	d.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("jjj")})
	d.settle()
	if d.m.tree.selected != "kid003" {
		t.Fatalf("jjj in one message selected %q", d.m.tree.selected)
	}
	// A paste into an input stays whole.
	d.keys("m")
	d.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("pasted text"), Paste: true})
	d.settle()
	d.mustShow("pasted text")
}

func TestNextWaitingJumpsIntoFoldsAndFilters(t *testing.T) {
	tasks := demoTasks()
	tasks = append(tasks, core.Task{ID: "deep01", Title: "Deep asker", ParentID: "kid001", Status: core.StatusInProgress, Profile: "mock",
		CreatedAt: testNow, UpdatedAt: testNow, PendingQuestion: userQuestion("q-deep", core.QuestionItem{Prompt: "ok?"})})
	d := newDriver(t, newFake(tasks...), 80, 24)
	d.keys("h") // fold root01
	d.keys("f") // state filter: waiting on you
	d.keys("f") // running: the askers are filtered out...
	// Most urgent first: ask001's agent sits in its question call; then,
	// in tree order, deep01 (a question nobody's turn holds) and kid003
	// (escalated to you).
	d.keys("w")
	if d.m.tree.selected != "ask001" {
		t.Fatalf("w selected %q, want ask001 (its agent waits in the call)", d.m.tree.selected)
	}
	d.mustShow("filter cleared", "ask001")
	d.keys("w")
	if d.m.tree.selected != "deep01" {
		t.Fatalf("second w selected %q, want deep01 (first asker in tree order)", d.m.tree.selected)
	}
	d.mustShow("deep01")
	d.keys("w")
	if d.m.tree.selected != "kid003" {
		t.Fatalf("third w selected %q, want kid003 (escalated to you)", d.m.tree.selected)
	}
	d.keys("w")
	if d.m.tree.selected != "ask001" {
		t.Fatalf("w should wrap around, selected %q", d.m.tree.selected)
	}
}

func TestNextWaitingWithNone(t *testing.T) {
	d := newDriver(t, newFake(demoTasks()[:3]...), 80, 24)
	d.keys("w")
	d.mustShow("no task is waiting on you")
}

func TestTextAndStateFilters(t *testing.T) {
	d := newDriver(t, newFake(demoTasks()...), 80, 24)
	d.keys("/")
	d.typeText("colour")
	if !d.m.typing {
		t.Fatal("filter input should have the keyboard")
	}
	d.mustShow("filter / colour", "kid002", "root01")
	d.mustNotShow("kid001", "ask001")
	d.keys("enter")
	d.mustShow(`filter: "colour"`)
	d.keys("esc") // clears the filter
	d.mustShow("kid001", "ask001")

	d.keys("f")
	d.mustShow("[waiting on you]", "ask001")
	d.mustNotShow("kid001")
	d.keys("f")
	d.mustShow("[running]", "kid001")
	d.mustNotShow("stop01", "ask001") // its agent waits on you: not running
	d.keys("f", "f")
	d.mustShow("[failed/stopped/escalated]", "stop01", "kid003")
	d.mustNotShow("ask001")
	d.keys("f")
	d.mustShow("[done]", "done01")
	d.keys("f")
	d.mustNotShow("filter:")

	d.keys("/")
	d.typeText("zzz")
	d.mustShow("no tasks here")
	d.keys("esc")
	d.mustShow("root01")
}

func TestNewTask(t *testing.T) {
	f := newFake(demoTasks()...)
	d := newDriver(t, f, 80, 24)
	d.selectTask("kid001")
	d.keys("n")
	d.mustShow("New task", "kid001 Extract the token store", "‹ mock ›")
	d.typeText("Add rate limits")
	d.keys("tab")
	d.typeText("mock: say hi")
	d.keys("tab", "tab", "right", "tab", "space", "tab", "tab", "space")
	d.keys("enter")
	if len(f.created) != 1 {
		t.Fatalf("CreateTask calls: %d", len(f.created))
	}
	got := f.created[0]
	// A child sends no directory: it works where its parent works, as
	// `kandev task create --parent` does.
	want := api.CreateTaskInput{Title: "Add rate limits", Prompt: "mock: say hi", ParentID: "kid001", Profile: "plain", Autopilot: true, Start: false, CWD: ""}
	if got.Title != want.Title || got.Prompt != want.Prompt || got.ParentID != want.ParentID || got.Profile != want.Profile ||
		got.Autopilot != want.Autopilot || got.Start != want.Start || got.CWD != want.CWD {
		t.Fatalf("CreateTask input %+v, want %+v", got, want)
	}
	if d.m.dialog != nil {
		t.Fatal("dialog should close on success")
	}
	if d.m.tree.selected != "new001" {
		t.Fatalf("new task not selected: %q", d.m.tree.selected)
	}
	d.mustShow("created task new001")
}

// The new task's prompt takes several lines, as a message does: ctrl+j
// breaks a line, ↑↓ move between its lines, the box grows with the text,
// and enter creates the task with the lines kept apart.
func TestNewTaskPromptTakesLines(t *testing.T) {
	f := newFake(demoTasks()...)
	d := newDriver(t, f, 80, 24)
	d.keys("n")
	d.typeText("Two steps")
	d.keys("tab")
	d.typeText("mock: say one")
	d.keys("ctrl+j")
	d.typeText("mock: say three")
	// Both lines show as typed, the first not scrolled out of the box.
	d.mustShow("prompt       mock: say one", "mock: say three")
	d.keys("up")
	if d.m.dialog.(*newTaskDialog).focus != ntPrompt {
		t.Fatal("↑ on the prompt's second line left the prompt")
	}
	d.keys("down", "alt+enter")
	d.typeText("mock: say four")
	d.mustShow("mock: say one", "mock: say three", "mock: say four", "ctrl+j new line")
	if h := d.m.dialog.(*newTaskDialog).prompt.Height(); h != 3 {
		t.Fatalf("the prompt shows %d rows for three lines", h)
	}
	d.keys("down")
	if d.m.dialog.(*newTaskDialog).focus != ntDesc {
		t.Fatal("↓ on the prompt's last line should move to the description")
	}
	d.keys("enter")
	if len(f.created) != 1 {
		t.Fatalf("CreateTask calls: %d", len(f.created))
	}
	if got, want := f.created[0].Prompt, "mock: say one\nmock: say three\nmock: say four"; got != want {
		t.Fatalf("prompt %q, want %q", got, want)
	}
}

func TestNewTaskRootAndRefusalInline(t *testing.T) {
	f := newFake(demoTasks()...)
	f.setErr("CreateTask", &core.Error{Code: core.CodeValidation, Message: `profile "plain" cannot run autopilot tasks: it does not accept an injected MCP server`})
	d := newDriver(t, f, 80, 24)
	d.keys("n")
	d.typeText("Auto thing")
	d.keys("tab", "tab", "tab", "left", "tab", "space", "tab", "space") // profile ‹ plain ›? no: left from the default
	d.keys("enter")
	if len(f.created) != 1 {
		t.Fatalf("CreateTask calls: %d", len(f.created))
	}
	if f.created[0].ParentID != "" {
		t.Fatalf("parent toggled off, got %q", f.created[0].ParentID)
	}
	if d.m.dialog == nil {
		t.Fatal("the dialog must stay open to show the refusal")
	}
	d.mustShow("New task", "refused", "cannot run autopilot")
	d.keys("esc")
	if d.m.dialog != nil {
		t.Fatal("esc closes the dialog")
	}
}

func TestAnswerWithOption(t *testing.T) {
	f := newFake(demoTasks()...)
	d := newDriver(t, f, 80, 24)
	d.selectTask("ask001")
	d.keys("a")
	d.mustShow("Answer task ask001", "Which DB?", "  1) sqlite", "2) postgres", "3) other:", "(nothing chosen)")
	d.keys("enter") // nothing chosen: nothing sent
	if len(f.answers) != 0 || d.m.dialog == nil {
		t.Fatalf("enter with nothing chosen sent %d answers", len(f.answers))
	}
	d.mustShow("nothing is chosen yet, so nothing was sent")
	d.keys("down", "down")
	d.mustShow("> 2) postgres")
	d.keys("enter")
	if len(f.answers) != 1 {
		t.Fatalf("AnswerQuestion calls %d", len(f.answers))
	}
	if a := f.answers[0]; a.QuestionID != "q-usr" || len(a.Answers) != 1 || a.Answers[0] != "2" {
		t.Fatalf("answer %+v", a)
	}
	d.mustShow("answered question q-usr of task ask001; the agent continues")
	if d.m.dialog != nil {
		t.Fatal("dialog should close")
	}
}

func TestAnswerMultiPartWithFreeText(t *testing.T) {
	tasks := demoTasks()
	tasks[4].PendingQuestion = userQuestion("q-multi", dbQuestion, core.QuestionItem{Prompt: "Table name?"},
		core.QuestionItem{Prompt: "Region?", Options: []core.QuestionOption{{Label: "eu"}, {Label: "us"}}})
	f := newFake(tasks...)
	d := newDriver(t, f, 80, 24)
	d.selectTask("ask001")
	d.keys("a")
	d.mustShow("1/3  Which DB?", "2/3  Table name?", "3/3  Region?")
	d.keys("2", "enter") // part 1: option 2, next part
	d.typeText("audit_log")
	d.keys("enter")          // part 3
	d.keys("up")             // wraps to "other"
	d.typeText("ap-south-1") // free text instead of an option
	d.keys("enter")
	if len(f.answers) != 1 {
		t.Fatalf("AnswerQuestion calls %d", len(f.answers))
	}
	got := strings.Join(f.answers[0].Answers, "|")
	if got != "2|audit_log|ap-south-1" {
		t.Fatalf("answers %q", got)
	}
}

func TestAnswerRefusals(t *testing.T) {
	f := newFake(demoTasks()...)
	d := newDriver(t, f, 80, 24)
	d.selectTask("kid002")
	d.keys("a")
	if d.m.dialog != nil {
		t.Fatal("a parent question must not open the answer dialog")
	}
	d.mustShow("is for task root01", "only it answers")
	d.selectTask("stop01")
	d.keys("a")
	d.mustShow("has no pending question")

	f.setErr("AnswerQuestion", &core.Error{Code: core.CodeConflict, Message: "question q-usr is stale (the task was stopped); it can no longer be answered"})
	d.selectTask("ask001")
	d.keys("a", "1", "enter")
	if d.m.dialog == nil {
		t.Fatal("dialog should stay open on refusal")
	}
	d.mustShow("refused", "question q-usr is stale")
}

// TestAnswerEscalatedChildQuestionFromParent is issue 22's "a on the
// parent" and issue 38's "the wrong question": a parent escalated to the
// operator for one subtask's question (q-par, kid002) while another
// subtask's question (q-new, kid001) waits on it too. The detail pane
// lists both, the named one first; a opens it, the answer goes to kid002
// as the answer to its question; a then opens the next; the operator
// answers in the parent's place (ADR 0069).
func TestAnswerEscalatedChildQuestionFromParent(t *testing.T) {
	tasks := demoTasks()
	root := &tasks[0]
	root.Assignee, root.YourTurn = &core.Ref{Kind: "person", Name: core.Operator}, true
	root.Stalled = &core.Stall{Reason: "Stalled", From: core.ParseBy("role:claude"), Detail: "unanswered question q-par from subtask kid002",
		QuestionID: "q-par", At: ago(time.Minute)}
	tasks[2].PendingQuestion.Questions = []core.QuestionItem{{Prompt: "Which colour?", Options: []core.QuestionOption{{Label: "blue"}, {Label: "green"}}}}
	// kid001's question is older than kid002's: without the escalation's
	// name it would come first, which is issue 38's bug.
	tasks[1].PendingQuestion = parentQuestion("q-new", "root01")
	tasks[1].PendingQuestion.Questions = []core.QuestionItem{{Prompt: "Which size?"}}
	tasks[1].PendingQuestion.AskedAt = ago(time.Hour)
	f := newFake(tasks...)
	d := newDriver(t, f, 120, 40)
	d.selectTask("root01")
	d.mustShow("?you 2 from subtasks, a answers each in turn:", "1. kid002 q-par: Which colour? (escalated)", "2. kid001 q-new: Which size?")
	d.keys("a")
	d.mustShow("Answer task kid002's question to task root01", "Task root01 is with you: you answer question q-par in its place", "Which colour?", "1) blue", "3) other:")
	d.keys("enter") // nothing chosen, nothing sent
	if len(f.answers) != 0 || len(f.messages) != 0 {
		t.Fatalf("enter with nothing chosen sent %+v %+v", f.answers, f.messages)
	}
	d.keys("2", "enter")
	if len(f.answers) != 1 || f.callCount("AnswerQuestion kid002") != 1 || len(f.messages) != 0 {
		t.Fatalf("answers %+v messages %+v calls %v", f.answers, f.messages, f.calls)
	}
	if got := f.answers[0]; got.QuestionID != "q-par" || len(got.Answers) != 1 || got.Answers[0] != "2" {
		t.Fatalf("answer %+v", got)
	}
	if d.m.dialog != nil {
		t.Fatal("the dialog should close")
	}
	d.mustShow("answered question q-par of task kid002", "1 more from subtasks: a opens the next")
	// The daemon's update of kid002 has not come: a opens the next all
	// the same, never the one just answered.
	d.keys("a")
	d.mustShow("Answer task kid001's question to task root01", "Which size?")
	d.typeText("large")
	d.keys("enter")
	if len(f.answers) != 2 || f.callCount("AnswerQuestion kid001") != 1 || f.answers[1].QuestionID != "q-new" || f.answers[1].Answers[0] != "large" {
		t.Fatalf("answers %+v calls %v", f.answers, f.calls)
	}
	d.keys("a")
	d.mustShow("task root01 has no pending question")

	// a on the subtask itself, while its parent is with you, opens its
	// question too.
	tasks = demoTasks()
	tasks[0].Assignee = &core.Ref{Kind: "person", Name: core.Operator}
	f = newFake(tasks...)
	d = newDriver(t, f, 80, 24)
	d.selectTask("kid002")
	d.keys("a")
	d.mustShow("Answer task kid002's question to task root01")

	// A parent that is not the operator's: its child's question is its
	// agent's to answer, as before.
	tasks = demoTasks()
	d = newDriver(t, newFake(tasks...), 80, 24)
	d.selectTask("root01")
	d.keys("a")
	if d.m.dialog != nil {
		t.Fatal("a parent that is not yours opens no dialog")
	}
	d.mustShow("has no pending question")
	d.selectTask("kid002")
	d.keys("a")
	if d.m.dialog != nil {
		t.Fatal("a subtask whose parent is not yours opens no dialog")
	}
	d.mustShow("only it answers")
}

func TestMessageWithInterrupt(t *testing.T) {
	f := newFake(demoTasks()...)
	d := newDriver(t, f, 80, 24)
	d.selectTask("kid001")
	d.keys("m")
	d.mustShow("Message task kid001", "[ ] interrupt")
	d.typeText("use the v2 API")
	d.keys("tab")
	d.mustShow("[x] interrupt", "cancels the running turn")
	d.keys("enter")
	if len(f.messages) != 1 || f.messages[0].Text != "use the v2 API" || f.messages[0].Delivery != api.DeliveryInterrupt {
		t.Fatalf("messages %+v", f.messages)
	}
	d.mustShow("interrupted the running turn")

	// Queued, to an idle task.
	d.selectTask("stop01")
	d.keys("m")
	d.typeText("carry on")
	d.keys("tab", "tab", "enter")
	if f.messages[1].Delivery != api.DeliveryQueued {
		t.Fatalf("second message %+v", f.messages[1])
	}
	d.mustShow("queued (position 1)")
}

func TestMessageRefusedInline(t *testing.T) {
	f := newFake(demoTasks()...)
	f.setErr("MessageTask", &core.Error{Code: core.CodeValidation, Message: "message text is required"})
	d := newDriver(t, f, 80, 24)
	d.keys("m", "enter")
	d.mustShow("refused", "message text is required")
}

func TestStopConfirms(t *testing.T) {
	f := newFake(demoTasks()...)
	d := newDriver(t, f, 80, 24)
	d.selectTask("kid001")
	d.keys("s")
	d.mustShow("Stop task kid001?", "y stop")
	d.keys("n")
	if d.m.dialog != nil || f.callCount("StopTask") != 0 {
		t.Fatal("n must cancel without stopping")
	}
	d.keys("s", "y")
	if f.callCount("StopTask kid001") != 1 {
		t.Fatalf("calls %v", f.calls)
	}
	d.mustShow("stopped task kid001")

	f.stopRes = "not_running"
	d.selectTask("done01")
	d.keys("s", "y")
	d.mustShow("done01 was not running")

	f.setErr("StopTask", &core.Error{Code: core.CodeForbidden, Message: "only task root01, the direct parent of task kid001, may stop it"})
	d.selectTask("kid001")
	d.keys("s", "y")
	d.mustShow("refused", "only task root01")
	if d.m.dialog == nil {
		t.Fatal("the confirmation stays open to show the refusal")
	}
	d.keys("esc")
	if d.m.dialog != nil {
		t.Fatal("esc closes it")
	}
}

func TestStartAndRefusalInStatusBar(t *testing.T) {
	f := newFake(demoTasks()...)
	d := newDriver(t, f, 80, 24)
	d.selectTask("stop01")
	d.keys("r")
	if f.callCount("StartTask stop01") != 1 {
		t.Fatalf("calls %v", f.calls)
	}
	d.mustShow("started task stop01")
	f.setErr("StartTask", &core.Error{Code: core.CodeConflict, Message: "task done01 is cancelled; reopen it first (kandev task status done01 todo)"})
	d.selectTask("done01")
	d.keys("r")
	d.mustShow("✗ start done01 refused: task done01 is cancelled; reopen it first")
	d.keys("esc")
	d.mustNotShow("refused")
}

func TestArchive(t *testing.T) {
	f := newFake(demoTasks()...)
	d := newDriver(t, f, 80, 24)
	d.selectTask("done01")
	d.keys("x")
	d.mustShow("Archive task done01?")
	d.keys("y")
	if f.callCount("ArchiveTask done01") != 1 {
		t.Fatalf("calls %v", f.calls)
	}
	d.mustNotShow("done01 mock")
	d.mustShow("archived task done01")
	if d.m.tree.selected == "done01" || d.m.tree.selected == "" {
		t.Fatalf("selection after archive: %q", d.m.tree.selected)
	}

	f.setErr("ArchiveTask", &core.Error{Code: core.CodeConflict, Message: "task kid001 has a live session; stop it first"})
	d.selectTask("kid001")
	d.keys("x", "y")
	d.mustShow("refused", "stop it first")
}

func TestHelpAndQuit(t *testing.T) {
	f := newFake(demoTasks()...)
	d := newDriver(t, f, 80, 24)
	d.keys("?")
	d.mustShow("kandev — keys", "w      next waiting", "@you assigned to you")
	d.keys("j")
	if d.m.dialog != nil {
		t.Fatal("any key closes help")
	}
	if d.m.tree.selected != "root01" {
		t.Fatal("the key that closes help does nothing else")
	}
	d.keys("q")
	if !d.quit {
		t.Fatal("q should quit")
	}
	if d.m.cancel != nil {
		t.Fatal("quitting ends the event stream")
	}
}

func TestCtrlCQuitsFromADialog(t *testing.T) {
	d := newDriver(t, newFake(demoTasks()...), 80, 24)
	d.keys("n", "ctrl+c")
	if !d.quit {
		t.Fatal("ctrl+c should quit from a dialog")
	}
}

func TestUnreachableDaemonIsShown(t *testing.T) {
	f := newFake(demoTasks()...)
	f.setErr("Events", &core.Error{Code: core.CodeUnavailable, Message: "cannot reach the kandev daemon at /x/kandev.sock: connection refused"})
	d := newDriver(t, f, 80, 24, func(o *Options) {
		o.Reconnect = func(context.Context) (api.Client, error) { return f, nil }
	})
	d.m.backoff = time.Hour
	d.settle()
	d.mustShow("daemon connection lost", "cannot reach the kandev daemon")
}

func TestListErrorsAreShown(t *testing.T) {
	f := newFake(demoTasks()...)
	f.setErr("ListProfiles", errors.New("boom"))
	d := newDriver(t, f, 80, 24)
	d.mustShow("list profiles: INTERNAL_ERROR: boom")
}

func TestConversationLoadsAndFollows(t *testing.T) {
	f := newFake(demoTasks()...)
	f.convo = demoConvo()
	d := newDriver(t, f, 80, 24)
	d.selectTask("ask001")
	d.mustShow("Looking at the schema…    done", "? for you › Which DB?", "[pending: press a to answer]")
	d.mustNotShow("\x1b", "[1;31m")
	// Live output is followed.
	for i := 0; i < 30; i++ {
		m := core.Message{Seq: int64(10 + i), TaskID: "ask001", Kind: core.MsgAgent, Text: "line " + itoa(i), CreatedAt: testNow, UpdatedAt: testNow}
		f.push(core.Event{Type: core.EventMessageAdded, TaskID: "ask001", Message: &m})
	}
	d.settle()
	d.mustShow("line 29")
	// Scrolling up stops following; new output is counted, G follows again.
	d.keys("tab", "pgup", "pgup")
	d.mustNotShow("line 29")
	m := core.Message{Seq: 50, TaskID: "ask001", Kind: core.MsgAgent, Text: "fresh", CreatedAt: testNow, UpdatedAt: testNow}
	f.push(core.Event{Type: core.EventMessageAdded, TaskID: "ask001", Message: &m})
	d.settle()
	d.mustShow("1 new lines below (G follows)")
	d.mustNotShow("fresh")
	d.keys("G")
	d.mustShow("fresh")
	// A streamed update replaces the entry in place.
	m2 := m
	m2.Text, m2.UpdatedAt = "fresh and longer", testNow.Add(time.Second)
	f.push(core.Event{Type: core.EventMessageUpdated, TaskID: "ask001", Message: &m2})
	d.settle()
	d.mustShow("fresh and longer")
	// Another task's messages do not show here.
	other := core.Message{Seq: 51, TaskID: "kid001", Kind: core.MsgAgent, Text: "elsewhere", CreatedAt: testNow, UpdatedAt: testNow}
	f.push(core.Event{Type: core.EventMessageAdded, TaskID: "kid001", Message: &other})
	d.settle()
	d.mustNotShow("elsewhere")
}

func TestConversationErrorShown(t *testing.T) {
	f := newFake(demoTasks()...)
	f.setErr("Conversation", &core.Error{Code: core.CodeNotFound, Message: "task zzz not found"})
	d := newDriver(t, f, 80, 24)
	d.mustShow("log: task zzz not found")
}

func TestStaleConversationPageIgnored(t *testing.T) {
	f := newFake(demoTasks()...)
	d := newDriver(t, f, 80, 24)
	old := d.m.detail.gen
	d.selectTask("kid001")
	d.send(convoPageMsg{gen: old, taskID: "root01", page: api.ConversationPage{Messages: []core.Message{{Seq: 1, TaskID: "root01", Kind: core.MsgAgent, Text: "stale"}}}})
	d.mustNotShow("stale")
}

func itoa(i int) string { return strconv.Itoa(i) }

func resize(w, h int) tea.WindowSizeMsg { return tea.WindowSizeMsg{Width: w, Height: h} }

func TestElapsedShowsTheRunningTurn(t *testing.T) {
	tasks := demoTasks()
	// kid001's session last changed after its turn began.
	tasks[1].Session.TurnStartedAt = ago(7 * time.Minute)
	// stop01's session ended: its last turn's start does not count.
	tasks[5].Session.TurnStartedAt = ago(time.Hour)
	// A running session the engine gave no turn start keeps the age.
	tasks = append(tasks, core.Task{ID: "old001", Title: "From an older daemon", Status: core.StatusInProgress, Profile: "mock",
		CreatedAt: ago(time.Hour), UpdatedAt: ago(9 * time.Minute), Session: session("old001", core.SessionRunning, ago(9*time.Minute))})
	d := newDriver(t, newFake(tasks...), 100, 30)
	for id, want := range map[string]string{"kid001": " 7m", "ask001": " 5m", "stop01": " 8m", "old001": " 9m"} {
		if row := d.rowOf(id); !strings.HasSuffix(strings.TrimRight(row, " "), want) {
			t.Errorf("row of %s should end in %q: %q", id, want, row)
		}
	}
	d.selectTask("ask001")
	d.mustShow("session s-ask001 running · this turn 5m05s · turns 1 · pid 4242")
	// The clock moves on (a tick sets now; the driver runs no ticks).
	d.m.now = testNow.Add(2 * time.Minute)
	d.mustShow("this turn 7m05s")
	d.m.now = testNow
	d.selectTask("stop01")
	d.mustNotShow("this turn")
	d.selectTask("old001")
	d.mustShow("session s-old001 running · turns 1")
	d.mustNotShow("this turn")
}

func TestLongDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second: "0s", 42 * time.Second: "42s", 4*time.Minute + 5*time.Second: "4m05s",
		time.Hour + 7*time.Minute + 59*time.Second: "1h07m", 50 * time.Hour: "2d02h",
	} {
		if got := longDuration(d); got != want {
			t.Errorf("longDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestDetailWrapsTitleAndDescription(t *testing.T) {
	long := strings.Repeat("Migrate the 日本語 billing tables to the new schema ", 12)
	desc := "First paragraph: the old tables are sharded by customer.\n\n" + strings.Repeat("全角の説明文と English words mixed together, ", 30)
	tasks := append(demoTasks(), core.Task{ID: "wrap01", Title: long, Description: desc, Status: core.StatusTodo, Profile: "mock",
		CreatedAt: testNow, UpdatedAt: testNow})
	for _, size := range [][2]int{{80, 24}, {100, 40}, {200, 50}} {
		f := newFake(tasks...)
		f.convo["wrap01"] = entries("wrap01", 1, 40)
		d := newDriver(t, f, size[0], size[1])
		d.selectTask("wrap01")
		l := d.m.layout()
		header := detailHeader(d.m.st, d.m.selectedTask(), l.detailW, l.detail, testNow)
		if len(header) > max(l.detail/2, 4) {
			t.Fatalf("%dx%d: the header takes %d of %d lines", size[0], size[1], len(header), l.detail)
		}
		text := strings.Join(header, "\n")
		if !strings.Contains(text, "Migrate the 日本語 billing") || !strings.Contains(text, "tables to the new") {
			t.Fatalf("%dx%d: the title should wrap, not be cut at the first line:\n%s", size[0], size[1], text)
		}
		if !strings.Contains(text, "First paragraph") || !strings.HasSuffix(header[len(header)-1], "…") {
			t.Fatalf("%dx%d: the description should wrap and end in … when it does not fit:\n%s", size[0], size[1], text)
		}
		for i, ln := range header {
			if w := width(ln); w > l.detailW {
				t.Fatalf("%dx%d: header line %d is %d cells wide (pane %d): %q", size[0], size[1], i, w, l.detailW, ln)
			}
		}
		d.mustShow("entry 40") // the log keeps its room
		// A short title and description take a line each, as before.
		d.selectTask("kid001")
		d.mustShow("Extract the token store")
	}
}

func TestMessageMultiLine(t *testing.T) {
	f := newFake(demoTasks()...)
	d := newDriver(t, f, 80, 24)
	d.selectTask("kid001")
	d.keys("m")
	d.mustShow("alt+enter/ctrl+j new line")
	d.typeText("first line")
	d.keys("ctrl+j")
	d.typeText("second line")
	d.keys("alt+enter")
	d.typeText("third")
	d.mustShow("> first line", "  second line", "  third")
	if len(f.messages) != 0 {
		t.Fatal("a newline must not send")
	}
	d.keys("enter")
	if len(f.messages) != 1 || f.messages[0].Text != "first line\nsecond line\nthird" {
		t.Fatalf("messages %+v", f.messages)
	}
	// A pasted block keeps its lines.
	d.keys("m")
	d.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("one\ntwo"), Paste: true})
	d.settle()
	d.keys("enter")
	if len(f.messages) != 2 || f.messages[1].Text != "one\ntwo" {
		t.Fatalf("pasted message %+v", f.messages)
	}
}

func TestMarkDoneConfirms(t *testing.T) {
	f := newFake(demoTasks()...)
	d := newDriver(t, f, 80, 24)
	d.selectTask("kid003")
	d.keys("d")
	d.mustShow("Mark task kid003 done?", "now ◐ review · with @you", "> 4) ✓ done", "3) ◐ review  (now)",
		"Done and cancelled halt a running agent; none runs now.", "y/enter set done")
	d.keys("n")
	if d.m.dialog != nil || len(f.statuses) != 0 {
		t.Fatal("n must cancel without a status change")
	}
	d.keys("d", "enter")
	if len(f.statuses) != 1 || f.statuses[0] != (statusCall{"kid003", core.StatusDone}) {
		t.Fatalf("SetTaskStatus calls %+v", f.statuses)
	}
	if d.m.dialog != nil {
		t.Fatal("the dialog closes on success")
	}
	d.mustShow("task kid003: review → ✓ done")
}

func TestStatusChoicesAndHaltNote(t *testing.T) {
	f := newFake(demoTasks()...)
	d := newDriver(t, f, 80, 24)
	d.selectTask("kid001") // running
	d.keys("d")
	d.mustShow("Mark task kid001 done?", "Its agent is running: done halts it")
	d.keys("5")
	d.mustShow("Task kid001: in_progress → cancelled?", "> 5) ✗ cancelled", "Its agent is running: cancelled halts it")
	d.keys("up", "up")
	d.mustShow("Task kid001: in_progress → review?", "> 3) ◐ review", "Only the status changes")
	d.mustNotShow("halts it")
	d.keys("k", "1", "y")
	if len(f.statuses) != 1 || f.statuses[0] != (statusCall{"kid001", core.StatusTodo}) {
		t.Fatalf("SetTaskStatus calls %+v", f.statuses)
	}
	d.mustShow("task kid001: in_progress → ○ todo")
}

func TestStatusRefusalShownInDialog(t *testing.T) {
	f := newFake(demoTasks()...)
	d := newDriver(t, f, 80, 24)
	d.selectTask("done01")
	d.keys("d")
	d.mustShow("Mark task done01 done?", "4) ✓ done  (now)")
	// The engine refuses an illegal move, naming both states; the dialog
	// keeps it and stays open.
	d.keys("3", "enter")
	d.mustShow("refused", "task done01: cannot move a task from done to review")
	if d.m.dialog == nil {
		t.Fatal("the dialog stays open to show the refusal")
	}
	d.keys("enter") // the same choice again: nothing is resent
	if len(f.statuses) != 1 {
		t.Fatalf("enter after a refusal resent: %+v", f.statuses)
	}
	d.keys("1") // another choice clears the refusal
	d.mustNotShow("refused")
	d.keys("enter")
	d.mustShow("task done01: done → ○ todo")

	f.setErr("SetTaskStatus", &core.Error{Code: core.CodeConflict, Message: "task kid003 is archived"})
	d.selectTask("kid003")
	d.keys("d", "y")
	d.mustShow("✗ refused: task kid003 is archived")
	d.keys("esc")
	if d.m.dialog != nil {
		t.Fatal("esc closes it")
	}
}

func TestHandOnBackWithMessage(t *testing.T) {
	f := newFake(demoTasks()...)
	d := newDriver(t, f, 80, 30) // tall enough for the whole list
	d.selectTask("kid003")
	d.keys("o")
	if f.callCount("ListRoles") != 1 || f.callCount("ListPersons") != 1 {
		t.Fatalf("the dialog loads roles and people: %v", f.calls)
	}
	d.mustShow("Hand on task kid003 · Write the migration", "now with you · handed over by role mock",
		"> back     → role mock, who handed it over", "reviewer role · profile claude · reports to you",
		"operator person · you · has it now", "alice    person")
	d.keys("enter") // to the message
	d.typeText("mock: say continuing")
	d.keys("ctrl+j")
	d.typeText("and mind the rollback")
	d.mustShow("> message  mock: say continuing", "and mind the rollback")
	d.keys("enter")
	if len(f.handoffs) != 1 || f.handoffs[0] != (api.HandoffInput{To: "back", Message: "mock: say continuing\nand mind the rollback"}) {
		t.Fatalf("HandoffTask calls %+v", f.handoffs)
	}
	if d.m.dialog != nil {
		t.Fatal("the dialog closes on success")
	}
	d.mustShow("handed task kid003 to role mock; its agent runs")
}

func TestHandOnTypeToFilter(t *testing.T) {
	f := newFake(demoTasks()...)
	d := newDriver(t, f, 80, 30) // tall enough for the whole list
	d.selectTask("kid003")
	d.keys("o")
	d.typeText("re")
	d.mustShow("> to       re", "> reviewer")
	d.mustNotShow("alice", "back ")
	d.send(tea.KeyMsg{Type: tea.KeyBackspace})
	d.send(tea.KeyMsg{Type: tea.KeyBackspace})
	d.settle()
	d.mustShow("back", "alice")
	d.typeText("a")                // back, plainer, operator, alice, claude, plain
	d.keys("down", "down", "down") // to alice
	d.mustShow("> alice")
	d.keys("tab", "enter") // tab to the message, send without one
	if len(f.handoffs) != 1 || f.handoffs[0] != (api.HandoffInput{To: "alice"}) {
		t.Fatalf("HandoffTask calls %+v", f.handoffs)
	}
	d.mustShow("handed task kid003 to person alice; it waits for them")

	// A task delegated by another task goes back to it for sign-off.
	f.mu.Lock()
	f.tasks[2].HandedBy = &core.Ref{Kind: "task", Name: "root01"}
	f.mu.Unlock()
	tasks := demoTasks()
	tasks[2].HandedBy = &core.Ref{Kind: "task", Name: "root01"}
	d.send(tasksMsg{gen: d.m.gen, tasks: tasks})
	d.selectTask("kid002")
	d.keys("o")
	d.mustShow("> back", "back     → task root01: its agent signs it off")
	d.keys("enter", "enter")
	d.mustShow("handed task kid002 back to task root01; its agent is asked to sign it off")
}

func TestHandOnRefusalsInline(t *testing.T) {
	f := newFake(demoTasks()...)
	d := newDriver(t, f, 80, 24)

	// An unknown name, typed: the engine is asked and refuses.
	d.selectTask("kid003")
	d.keys("o")
	d.typeText("nobody")
	d.mustShow(`none listed matches: the engine is asked for "nobody"`)
	d.keys("enter", "enter")
	if len(f.handoffs) != 1 || f.handoffs[0].To != "nobody" {
		t.Fatalf("HandoffTask calls %+v", f.handoffs)
	}
	d.mustShow("Hand on task kid003", "✗ refused: no role or person named nobody")

	// Already with them.
	d.keys("tab")
	for range "nobody" {
		d.send(tea.KeyMsg{Type: tea.KeyBackspace})
	}
	d.typeText("operator")
	d.keys("enter", "enter")
	d.mustShow("✗ refused: task kid003 is already with person operator")
	d.keys("esc")

	// Nobody to hand back to: back is offered but not chosen first.
	d.selectTask("stop01")
	d.keys("o")
	d.mustShow("now with nobody · nobody handed it over", "back     nobody handed it over: the engine refuses back", "> mock")
	d.keys("up", "enter", "enter")
	d.mustShow("✗ refused: task stop01 has nobody to hand back to")
	d.keys("esc")

	// An autopilot task and a role whose profile has no MCP server.
	d.selectTask("kid001")
	d.keys("o")
	d.mustShow("plainer  role · profile plain · no MCP: not for autopilot")
	d.typeText("plainer")
	d.keys("enter", "enter")
	d.mustShow("✗ refused: task kid001 is on autopilot and role plainer cannot run it")
	if d.m.dialog == nil {
		t.Fatal("the dialog stays open to show the refusal")
	}
	d.keys("esc")
	if d.m.dialog != nil {
		t.Fatal("esc closes it")
	}
}

func TestHandOnWhenListingFails(t *testing.T) {
	f := newFake(demoTasks()...)
	f.setErr("ListPersons", &core.Error{Code: core.CodeUnavailable, Message: "daemon went away"})
	d := newDriver(t, f, 80, 24)
	d.selectTask("kid003")
	d.keys("o")
	d.mustShow("✗ list people: UNAVAILABLE: daemon went away", "> back", "reviewer")
	d.mustNotShow("alice")
	d.typeText("alice") // a name the list lacks is still sent
	d.keys("enter", "enter")
	if len(f.handoffs) != 1 || f.handoffs[0].To != "alice" {
		t.Fatalf("HandoffTask calls %+v", f.handoffs)
	}
}

func TestHandOnScrollsALongList(t *testing.T) {
	f := newFake(demoTasks()...)
	for i := 0; i < 12; i++ {
		f.persons = append(f.persons, api.Person{Name: "person" + itoa(i)})
	}
	d := newDriver(t, f, 80, 24)
	d.selectTask("kid003")
	d.keys("o")
	d.mustShow("5 of 20 shown")
	d.mustNotShow("person11")
	d.keys("up") // wraps to the last
	d.mustShow("> plain ")
	for i := 0; i < 4; i++ {
		d.keys("up")
	}
	d.mustShow("> person9", "person11")
	d.mustNotShow("back ")
}

func TestHelpShowsHandOnAndDone(t *testing.T) {
	d := newDriver(t, newFake(demoTasks()...), 80, 24)
	bar := d.m.helpBar()
	if w := width(bar); w != 80 {
		t.Fatalf("the help bar is %d cells wide", w)
	}
	for _, want := range []string{"a answer", "m msg", "o hand on", "d done", "s stop", "w waiting", "? help"} {
		if !strings.Contains(bar, want) {
			t.Errorf("the 80-column help bar lacks %q: %q", want, bar)
		}
	}
	d.keys("?")
	d.mustShow("o      hand on", "d      done/status", "x      archive")
}

// The detail pane says where a confined task's agent runs; a task on the
// host says nothing.
func TestDetailShowsSandbox(t *testing.T) {
	boxed := core.Task{ID: "box001", Title: "boxed", Status: core.StatusTodo, Profile: "mock", Sandbox: core.SandboxBwrap,
		CreatedAt: testNow, UpdatedAt: testNow}
	plain := core.Task{ID: "pln001", Title: "plain", Status: core.StatusTodo, Profile: "mock", Sandbox: core.SandboxNone,
		CreatedAt: testNow, UpdatedAt: testNow}
	d := newDriver(t, newFake(boxed, plain), 100, 30)
	for _, c := range []struct {
		id   string
		want bool
	}{{"box001", true}, {"pln001", false}} {
		d.selectTask(c.id)
		l := d.m.layout()
		text := strings.Join(detailHeader(d.m.st, d.m.selectedTask(), l.detailW, l.detail, testNow), "\n")
		if strings.Contains(text, "sandbox bwrap") != c.want || strings.Contains(text, "sandbox none") {
			t.Errorf("%s: header %q", c.id, text)
		}
	}
}

// The help screen's legend names every badge a row can show, with what it
// means, at 80×24 as at 120×40.
func TestHelpLegendNamesEveryBadge(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		d := newDriver(t, newFake(demoTasks()...), size[0], size[1])
		d.keys("?")
		scr := d.view()
		for k, text := range badgeText {
			if badgeLegend[k] == "" {
				t.Fatalf("badge %s has no legend", text)
			}
			if !strings.Contains(scr, text+" ") {
				t.Errorf("at %dx%d the help lacks %s:\n%s", size[0], size[1], text, scr)
			}
		}
		d.mustNotShow("a taller terminal")
	}
}

// At 120 columns the tree takes what its rows need and the detail pane the
// rest: a tree of short titles leaves the detail its header whole, and a
// header wider than the pane breaks between its parts, never inside one.
func TestWideDetailTakesWhatTheTreeDoesNotNeed(t *testing.T) {
	tasks := []core.Task{
		{ID: "hi0001", Title: "Say hi", Status: core.StatusInProgress, Profile: "claude-code", Sandbox: "bwrap", Autopilot: true,
			Host: "build-box-2", CreatedAt: ago(time.Minute), UpdatedAt: ago(time.Minute),
			Session: turnFrom(session("hi0001", core.SessionRunning, ago(time.Minute)), ago(time.Minute))},
		{ID: "hi0002", Title: "Say bye", Status: core.StatusTodo, Profile: "mock", CreatedAt: ago(time.Minute), UpdatedAt: ago(time.Minute)},
	}
	tasks[0].Session.PID = 1712345
	d := newDriver(t, newFake(tasks...), 120, 40)
	d.selectTask("hi0001")
	l := d.m.layout()
	if l.treeW != 40 || l.detailW != 79 {
		t.Fatalf("tree %d and detail %d columns at 120, want 40 (a third: the rows need less) and 79", l.treeW, l.detailW)
	}
	d.mustShow("hi0001 · ● in_progress · profile claude-code · AUTO · sandbox bwrap", "│host build-box-2 · root",
		"session s-hi0001 running · this turn 1m00s · turns 1 · pid 1712345")
	d.mustNotShow("sandb…", "pid 17…")

	// A long title takes the tree up to eleven twentieths; the detail's
	// header then breaks between its parts.
	tasks[1].Title = strings.Repeat("a long title ", 8)
	d = newDriver(t, newFake(tasks...), 120, 40)
	d.selectTask("hi0001")
	if l := d.m.layout(); l.treeW != 66 {
		t.Fatalf("a long title gives the tree %d columns at 120, want 66", l.treeW)
	}
	d.mustShow("│hi0001 · ● in_progress · profile claude-code · AUTO", "│sandbox bwrap · host build-box-2 · root", "│pid 1712345")
	d.mustNotShow("sandb…", "pid 17…")
}

// R starts a daemon that resumes interrupted runs: the status line names
// them, once (issue 38): the notice is taken when said.
func TestRStartSaysWhichRunsResumed(t *testing.T) {
	f := newFake(demoTasks()...)
	notice := ""
	d := newDriver(t, f, 160, 24, func(o *Options) {
		o.Reconnect = func(ctx context.Context) (api.Client, error) {
			notice = `started the kandev daemon (pid 9); it resumed 1 interrupted run: work01 "Refactor"`
			return f, nil
		}
		o.Attach = func(ctx context.Context) (api.Client, error) { return nil, ErrNoDaemon }
		o.TakeNotice = func() string { n := notice; notice = ""; return n }
	})
	d.m.backoff = time.Hour
	f.endStream()
	d.settle()
	d.send(reconnectMsg{gen: d.m.gen})
	d.settle()
	d.keys("R")
	d.mustShow("reconnected to the daemon; reloaded; started the kandev daemon (pid 9); it resumed 1 interrupted run: work01")
	if notice != "" {
		t.Fatal("the notice was not taken")
	}
}
