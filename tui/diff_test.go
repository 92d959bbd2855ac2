package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/muesli/termenv"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// diffTasks is the demo with a task working in its own worktree (wt0001)
// and one in its parent's (wt0002).
func diffTasks() []core.Task {
	tasks := demoTasks()
	tasks = append(tasks,
		core.Task{ID: "wt0001", Title: "Rename the config loader", Status: core.StatusReview, Profile: "mock",
			CWD: "/home/me/.local/share/kandev/worktrees/app/wt0001", CreatedAt: ago(9 * time.Minute), UpdatedAt: ago(7 * time.Minute),
			Workspace: &core.Workspace{Mode: core.WorkspaceWorktree, Repo: "/home/me/app", Dir: "/home/me/.local/share/kandev/worktrees/app/wt0001",
				Branch: "kandev/wt0001-rename-the-config-loader", Base: "0123456789abcdef0123"}},
		core.Task{ID: "wt0002", Title: "Test the loader", ParentID: "wt0001", Status: core.StatusTodo, Profile: "mock",
			CreatedAt: ago(8 * time.Minute), UpdatedAt: ago(8 * time.Minute),
			Workspace: &core.Workspace{Mode: core.WorkspaceInherit, Repo: "/home/me/app", Dir: "/home/me/.local/share/kandev/worktrees/app/wt0001",
				Branch: "kandev/wt0001-rename-the-config-loader"}},
	)
	return tasks
}

// loaderDiff is wt0001's change: two files, one of them long enough to
// scroll at 80×24.
func loaderDiff() api.TaskDiff {
	var b strings.Builder
	b.WriteString("diff --git a/config/load.go b/config/load.go\nindex 1111111..2222222 100644\n--- a/config/load.go\n+++ b/config/load.go\n")
	b.WriteString("@@ -1,4 +1,4 @@ package config\n")
	b.WriteString(" package config\n-func Load(path string) (*Config, error) {\n+func LoadFile(path string) (*Config, error) {\n \treturn read(path)\n")
	b.WriteString("@@ -20,3 +20,12 @@ func read(path string) (*Config, error) {\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "+\t// step %d of the new loader\n", i)
	}
	b.WriteString(" }\n-// old comment\n")
	b.WriteString("diff --git a/README.md b/README.md\nnew file mode 100644\nindex 0000000..3333333\n--- /dev/null\n+++ b/README.md\n@@ -0,0 +1,2 @@\n+# App\n+Load the config with LoadFile.\n")
	return api.TaskDiff{TaskID: "wt0001", Dir: "/home/me/.local/share/kandev/worktrees/app/wt0001", Branch: "kandev/wt0001-rename-the-config-loader",
		Base: "0123456789abcdef0123", Into: "main", Files: []api.DiffFileStat{{Path: "config/load.go", Added: 10, Deleted: 2}, {Path: "README.md", Added: 2, Deleted: 0}},
		Added: 12, Deleted: 2, Patch: b.String()}
}

func diffFake() *fakeClient {
	f := newFake(diffTasks()...)
	f.diffs["wt0001"] = loaderDiff()
	return f
}

func TestDiffViewShowsFilesAndHunks(t *testing.T) {
	f := diffFake()
	d := newDriver(t, f, 80, 24)
	d.selectTask("wt0001")
	d.keys("v")
	if f.callCount("TaskDiff wt0001 patch") != 1 {
		t.Fatalf("v should read the diff with its patch once; calls: %v", f.calls)
	}
	d.mustShow("Diff of task wt0001 · kandev/wt0001-rename-the-config-loader",
		"+12 −2 in 2 files · against 0123456789ab",
		"> config/load.go", "README.md", "▸ config/load.go", "@@ -1,4 +1,4 @@ package config",
		"-func Load(path string)", "+func LoadFile(path string)")
	// git's own header lines are left out; the body fills the screen.
	d.mustNotShow("index 1111111", "+++ b/config/load.go", "Split the auth module")
	if h := strings.Count(d.view(), "\n") + 1; h != 24 {
		t.Fatalf("the diff view is %d lines high, want 24", h)
	}

	// tab goes to the next file; the list marks it.
	d.keys("tab")
	d.mustShow("> README.md", "▸ README.md", "new file mode 100644", "+# App")
	d.mustNotShow("-func Load(path string)")
	d.keys("shift+tab")
	d.mustShow("> config/load.go", "-func Load(path string)")
	// j moves the cursor, the page stays; pgdown scrolls; G goes to the end.
	d.keys("j")
	d.mustShow("▸ config/load.go")
	d.keys("pgdown")
	d.mustNotShow("▸ config/load.go")
	d.keys("G")
	d.mustShow("+Load the config with LoadFile.")
	// esc closes it, back to the tree.
	d.keys("esc")
	if d.m.dialog != nil {
		t.Fatal("esc should close the diff view")
	}
	d.mustShow("Rename the config loader", "── log ")
}

func TestDiffViewShowsRefusal(t *testing.T) {
	f := diffFake()
	d := newDriver(t, f, 80, 24)
	d.selectTask("done01")
	d.keys("v")
	d.mustShow("Diff of task done01", "✗ task done01 runs in a shared directory")
	d.keys("q")
	if d.m.dialog != nil {
		t.Fatal("q should close the diff view")
	}
}

// The detail pane reads the change summary of the selected task only,
// once the selection rests on it; a row that is only passed over, or
// never selected, costs nothing.
func TestDetailChangeSummaryForSelectedTaskOnly(t *testing.T) {
	f := diffFake()
	d := newDriver(t, f, 80, 24)
	if n := f.callCount("TaskDiff"); n != 0 {
		t.Fatalf("nothing selected has a worktree; TaskDiff calls: %d", n)
	}
	d.selectTask("wt0001")
	d.mustShow("branch kandev/wt0001-rename-the-config-loader · +12 −2 in 2 files (v shows them)",
		"dir /home/me/.local/share/kandev/worktrees/app/wt0001")
	if n, p := f.callCount("TaskDiff wt0001"), f.callCount("TaskDiff wt0001 patch"); n != 1 || p != 0 {
		t.Fatalf("the summary should be read once, without the patch: %d reads, %d with the patch", n, p)
	}
	// A task in its parent's worktree says so and reads nothing.
	d.selectTask("wt0002")
	d.mustShow("branch kandev/wt0001-rename-the-config-loader · in its parent's worktree")
	if n := f.callCount("TaskDiff"); n != 1 {
		t.Fatalf("an inheriting task has no diff of its own; TaskDiff calls: %d", n)
	}
	if n := f.callCount("TaskDiff wt0002"); n != 0 {
		t.Fatalf("TaskDiff wt0002 called %d times", n)
	}
}

// While the operator moves quickly, the summary waits for the selection
// to rest (the debounce), as the conversation does.
func TestDetailChangeSummaryWaitsForTheSelectionToRest(t *testing.T) {
	f := diffFake()
	d := newDriver(t, f, 80, 24)
	d.m.debounce = time.Hour
	d.selectTask("wt0001")
	if n := f.callCount("TaskDiff"); n != 0 {
		t.Fatalf("the selection has not rested; TaskDiff calls: %d", n)
	}
	d.mustShow("branch kandev/wt0001-rename-the-config-loader · changes …")
	d.send(convoLoadMsg{gen: d.m.detail.gen})
	d.settle()
	d.mustShow("+12 −2 in 2 files")
}

// When the task's turn ends its change summary is read again.
func TestDetailChangeSummaryRefreshesWhenTheTurnEnds(t *testing.T) {
	f := diffFake()
	running := diffTasks()
	d := newDriver(t, f, 80, 24)
	d.selectTask("wt0001")
	d.mustShow("+12 −2 in 2 files")
	wt := running[len(running)-2]
	wt.Session = turnFrom(session("wt0001", core.SessionRunning, ago(time.Minute)), ago(time.Minute))
	d.send(eventsMsg{gen: d.m.gen, events: []core.Event{{Type: core.EventTaskUpdated, Task: &wt}}})
	d.settle()
	before := f.callCount("TaskDiff wt0001")
	next := loaderDiff()
	next.Files = append(next.Files, api.DiffFileStat{Path: "extra.go", Added: 5})
	next.Added += 5
	f.mu.Lock()
	f.diffs["wt0001"] = next
	f.mu.Unlock()
	ended := *wt.Session
	ended.State = core.SessionWaitingForInput
	ended.TurnStartedAt = time.Time{}
	d.send(eventsMsg{gen: d.m.gen, events: []core.Event{{Type: core.EventSessionUpdated, TaskID: "wt0001", Session: &ended}}})
	d.settle()
	if n := f.callCount("TaskDiff wt0001"); n != before+1 {
		t.Fatalf("the turn's end should read the summary again once: %d reads, want %d", n, before+1)
	}
	d.mustShow("+17 −2 in 3 files")
}

func TestGoldenDiffView(t *testing.T) {
	f := diffFake()
	g := goldenProgram(t, f, 80, 24)
	g.waitScreen("9 tasks")
	g.keys("G")
	g.waitScreen("> └─○ Test the loader")
	g.keys("k")
	g.waitScreen("+12 −2 in 2 files (v shows them)")
	g.keys("v")
	g.waitScreen("Diff of task wt0001", "▸ config/load.go")
	golden.RequireEqual(t, g.finalScreen())
}

// With colour, added and removed lines and hunk headers have their own
// colours (styles.go); without it they read by their +/-/@@ prefixes.
func TestDiffLineColours(t *testing.T) {
	r := lipgloss.NewRenderer(nil)
	r.SetColorProfile(termenv.TrueColor)
	st := newStyles(r, true)
	seen := map[string]diffKind{}
	for _, k := range []diffKind{diffAdded, diffRemoved, diffHunk} {
		out := renderDiffLine(st, diffLine{text: "+x", kind: k}, 20)
		if !strings.Contains(out, "\x1b[") {
			t.Fatalf("kind %d is not coloured: %q", k, out)
		}
		if other, dup := seen[out]; dup {
			t.Fatalf("kinds %d and %d look the same: %q", k, other, out)
		}
		seen[out] = k
	}
	if out := renderDiffLine(testStyles(), diffLine{text: "+x", kind: diffAdded}, 20); out != "+x" {
		t.Fatalf("without colour an added line is its text: %q", out)
	}
}

func TestGoldenDetailChanges(t *testing.T) {
	f := diffFake()
	g := goldenProgram(t, f, 80, 24)
	g.waitScreen("9 tasks")
	g.keys("G", "k")
	g.waitScreen("+12 −2 in 2 files (v shows them)")
	golden.RequireEqual(t, g.finalScreen())
}
