package tui

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/kandev/kandev/core"
)

// The golden screens run the real bubbletea program (teatest) against the
// fake client, with a fixed clock, no animation and no color, at a fixed
// size, so every frame is the same on every machine. Update them with
// `go test ./tui -run Golden -update`.

// probe wraps the model to publish each frame after its Update, so a test
// can wait for a state rather than for bytes in the output stream.
type probe struct {
	m    *Model
	mu   sync.Mutex
	last string
}

func (p *probe) Init() tea.Cmd { return p.m.Init() }

func (p *probe) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := p.m.Update(msg)
	v := p.m.View()
	p.mu.Lock()
	p.last = v
	p.mu.Unlock()
	return p, cmd
}

func (p *probe) View() string { return p.m.View() }

func (p *probe) frame() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

type goldenRun struct {
	t  *testing.T
	tm *teatest.TestModel
	p  *probe
}

func goldenProgram(t *testing.T, f *fakeClient, w, h int) *goldenRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	m := newModel(ctx, f, Options{Now: func() time.Time { return testNow }, Location: time.UTC, CWD: "/work"}, testStyles())
	m.tickEvery, m.debounce = 0, 0
	p := &probe{m: m}
	return &goldenRun{t: t, p: p, tm: teatest.NewTestModel(t, p, teatest.WithInitialTermSize(w, h))}
}

// waitScreen waits until the latest frame shows all of want and no
// conversation is still loading.
func (g *goldenRun) waitScreen(want ...string) {
	g.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		f := g.p.frame()
		ok := !strings.Contains(f, "loading…") && !strings.Contains(f, "working…")
		for _, w := range want {
			ok = ok && strings.Contains(f, w)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("screen never showed %q; last frame:\n%s", want, f)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (g *goldenRun) keys(keys ...string) {
	for _, k := range keys {
		g.tm.Send(keyMsg(k))
	}
}

func (g *goldenRun) typeText(s string) {
	for _, r := range s {
		g.tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
}

// finalScreen quits and returns the last frame the program drew; the
// output stream must also have carried it to the terminal.
func (g *goldenRun) finalScreen() []byte {
	g.t.Helper()
	g.tm.Send(tea.KeyMsg{Type: tea.KeyCtrlC})
	p := g.tm.FinalModel(g.t, teatest.WithFinalTimeout(5*time.Second)).(*probe)
	out, err := io.ReadAll(g.tm.FinalOutput(g.t))
	if err != nil || len(out) == 0 {
		g.t.Fatalf("the program wrote nothing to its terminal (%v)", err)
	}
	return []byte(p.View() + "\n")
}

func TestGoldenTree(t *testing.T) {
	f := newFake(demoTasks()...)
	f.convo = demoConvo()
	g := goldenProgram(t, f, 80, 24)
	g.waitScreen("7 tasks", "done01")
	g.keys("j", "j", "j", "j")
	g.waitScreen("[pending: press a to answer]")
	golden.RequireEqual(t, g.finalScreen())
}

func TestGoldenTreeWide(t *testing.T) {
	f := newFake(demoTasks()...)
	f.convo = demoConvo()
	g := goldenProgram(t, f, 200, 50)
	g.waitScreen("7 tasks", "done01")
	g.keys("j", "j", "j", "j")
	g.waitScreen("[pending: press a to answer]")
	golden.RequireEqual(t, g.finalScreen())
}

func TestGoldenAnswerDialog(t *testing.T) {
	tasks := demoTasks()
	tasks[4].PendingQuestion = userQuestion("q-usr", dbQuestion, core.QuestionItem{Prompt: "Name the table?"})
	f := newFake(tasks...)
	f.convo = demoConvo()
	g := goldenProgram(t, f, 80, 24)
	g.waitScreen("7 tasks")
	g.keys("w") // ask001 first: its agent waits in the question call
	g.waitScreen("[pending: press a to answer]")
	g.keys("a", "2")
	g.waitScreen("Answer task ask001", "2/2", "> 2) postgres")
	golden.RequireEqual(t, g.finalScreen())
}

func TestGoldenStopConfirm(t *testing.T) {
	f := newFake(demoTasks()...)
	g := goldenProgram(t, f, 80, 24)
	g.waitScreen("7 tasks")
	g.keys("j", "s")
	g.waitScreen("Stop task kid001?")
	golden.RequireEqual(t, g.finalScreen())
}

func TestGoldenEngineErrorInDialog(t *testing.T) {
	f := newFake(demoTasks()...)
	f.setErr("CreateTask", &core.Error{Code: core.CodeValidation,
		Message: `profile plain cannot run an autopilot task: it does not take an injected MCP server, and an autopilot agent coordinates through kandev's tools`})
	g := goldenProgram(t, f, 80, 24)
	g.waitScreen("7 tasks")
	g.keys("n")
	g.waitScreen("New task", "‹ claude ›")
	g.typeText("Autopilot on plain")
	// The dialog starts on the selected task's profile (claude); plain is
	// two to the right.
	g.keys("tab", "tab", "tab", "right", "right", "tab", "space", "enter")
	g.waitScreen("refused")
	golden.RequireEqual(t, g.finalScreen())
}

func TestGoldenEngineErrorInStatusBar(t *testing.T) {
	f := newFake(demoTasks()...)
	f.setErr("StartTask", &core.Error{Code: core.CodeConflict, Message: "task done01 is cancelled; reopen it first (kandev task status done01 todo)"})
	g := goldenProgram(t, f, 80, 24)
	g.waitScreen("7 tasks")
	g.keys("G")
	g.waitScreen("never ran")
	g.keys("r")
	g.waitScreen("refused")
	golden.RequireEqual(t, g.finalScreen())
}

func TestGoldenMessageMultiLine(t *testing.T) {
	f := newFake(demoTasks()...)
	g := goldenProgram(t, f, 80, 24)
	g.waitScreen("7 tasks")
	g.keys("j", "m")
	g.waitScreen("Message task kid001")
	g.typeText("Use the v2 token API.")
	g.keys("ctrl+j")
	g.typeText("Keep the old one behind a flag;")
	g.keys("alt+enter")
	g.typeText("remove it next release.")
	g.keys("tab")
	g.waitScreen("remove it next release.", "[x] interrupt")
	golden.RequireEqual(t, g.finalScreen())
}

func TestGoldenLogLoadingOlder(t *testing.T) {
	f := newFake(demoTasks()...)
	f.convo["kid001"] = entries("kid001", 1, 600)
	g := goldenProgram(t, f, 80, 24)
	g.waitScreen("7 tasks")
	g.keys("j")
	g.waitScreen("entry 600")
	// The read back waits, so the screen shows it loading.
	f.mu.Lock()
	f.gate = make(chan struct{})
	f.mu.Unlock()
	g.keys("tab", "g")
	g.waitScreen("↑ loading older…", "entry 101", "log · scrolled (G follows)")
	golden.RequireEqual(t, g.finalScreen())
}

func TestGoldenStatusDialog(t *testing.T) {
	f := newFake(demoTasks()...)
	g := goldenProgram(t, f, 80, 24)
	g.waitScreen("7 tasks")
	g.keys("w", "w") // ask001 (its agent waits on you), then kid003, escalated to you
	g.waitScreen("> └─◐ Write the migration")
	g.keys("d")
	g.waitScreen("Mark task kid003 done?")
	golden.RequireEqual(t, g.finalScreen())
}

func TestGoldenHandOnDialog(t *testing.T) {
	f := newFake(demoTasks()...)
	g := goldenProgram(t, f, 80, 30)
	g.waitScreen("7 tasks")
	g.keys("w", "w") // ask001 (its agent waits on you), then kid003, escalated to you
	g.waitScreen("> └─◐ Write the migration")
	g.keys("o")
	g.waitScreen("Hand on task kid003", "alice    person")
	g.keys("enter")
	g.typeText("mock: say continuing")
	g.keys("ctrl+j")
	g.typeText("Keep the old table until the backfill is checked.")
	g.waitScreen("> message  mock: say continuing", "backfill is checked.")
	golden.RequireEqual(t, g.finalScreen())
}

// manyTasks is the demo plus n plain tasks, more than 80×24 shows.
func manyTasks(n int) []core.Task {
	tasks := demoTasks()
	for i := range n {
		id := fmt.Sprintf("pl%04d", i)
		tasks = append(tasks, core.Task{ID: id, Title: fmt.Sprintf("Plain task number %d", i), Status: core.StatusTodo,
			Profile: "mock", CreatedAt: ago(time.Duration(n-i) * time.Second), UpdatedAt: ago(time.Duration(n-i) * time.Second)})
	}
	return tasks
}

// At 80×24 a tree longer than its pane says how many rows it hides above
// and below; with a filter on, the status bar keeps its counts.
func TestGoldenTreeOverflowFiltered(t *testing.T) {
	f := newFake(manyTasks(20)...)
	g := goldenProgram(t, f, 80, 24)
	g.waitScreen("27 tasks")
	g.keys("j", "j", "j", "j", "j", "j", "j", "j", "j", "j")
	g.waitScreen("↑ 5 more", "↓ 16 more")
	g.keys("/")
	g.typeText("plain task number")
	g.keys("enter")
	g.waitScreen(`filter: "plain`, "27 tasks · 1 running (+1 paused on you) · ?you 1 · ?parent 1")
	golden.RequireEqual(t, g.finalScreen())
}

// At 80×24 the message dialog's keys take one line and the interrupt
// note wraps under its checkbox; a task with a pending question says the
// message supersedes it.
func TestGoldenMessageHintFits(t *testing.T) {
	f := newFake(demoTasks()...)
	f.convo = demoConvo()
	g := goldenProgram(t, f, 80, 24)
	g.waitScreen("7 tasks")
	g.keys("j", "j", "j", "j")
	g.waitScreen("[pending: press a to answer]")
	g.keys("m")
	g.typeText("Use postgres, and say why in the migration's notes.")
	g.keys("tab")
	g.waitScreen("Message task ask001", "[x] interrupt", "superseded")
	golden.RequireEqual(t, g.finalScreen())
}

// TestGoldenZoom is the full-screen conversation at 80×24, searching.
func TestGoldenZoom(t *testing.T) {
	tasks := demoTasks()
	f := newFake(tasks...)
	f.convo = demoConvo()
	for i := 6; i <= 40; i++ {
		text := fmt.Sprintf("step %d of the audit log's migration", i)
		if i%10 == 0 {
			text += ": the schema checks out"
		}
		f.convo["ask001"] = append(f.convo["ask001"], core.Message{Seq: int64(i), TaskID: "ask001", Kind: core.MsgAgent,
			Text: text, CreatedAt: ago(4 * time.Minute), UpdatedAt: ago(4 * time.Minute)})
	}
	g := goldenProgram(t, f, 80, 24)
	g.waitScreen("7 tasks")
	g.keys("j", "j", "j", "j", "z")
	g.waitScreen("conversation · following", "step 40")
	g.keys("/")
	g.typeText("schema")
	g.keys("enter") // the first match on screen, then the next, then round to the first
	g.waitScreen(`"schema" 4/5`)
	g.keys("n", "n")
	g.waitScreen(`"schema" 1/5`)
	golden.RequireEqual(t, g.finalScreen())
}

// TestGoldenPermissionTypedWords is the permission dialog after issue
// 22's keystrokes: "no, dont" and enter chose and sent nothing.
func TestGoldenPermissionTypedWords(t *testing.T) {
	tasks := demoTasks()
	tasks[4].PendingQuestion = permissionTask("ask001", "./deploy.sh --env staging").PendingQuestion
	f := newFake(tasks...)
	f.convo = demoConvo()
	g := goldenProgram(t, f, 80, 24)
	g.waitScreen("7 tasks")
	g.keys("j", "j", "j", "j", "a")
	g.waitScreen("Permission for task ask001", "(nothing chosen)")
	g.typeText("no, dont")
	g.keys("enter")
	g.waitScreen("nothing was sent")
	if n := f.callCount("AnswerQuestion"); n != 0 {
		t.Fatalf("typed words answered the permission (%d calls)", n)
	}
	golden.RequireEqual(t, g.finalScreen())
}
