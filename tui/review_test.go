package tui

import (
	"testing"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// In the diff view: the cursor moves to a line, c writes a comment on it
// (or on the range V marked), shown under the line; c again edits it, x
// removes it, closing asks once before dropping unsent comments, and s
// sends them all as one review (MessageTask with comments), after which
// they show as the task's.
func TestDiffViewComments(t *testing.T) {
	f := diffFake()
	d := newDriver(t, f, 80, 24)
	d.selectTask("wt0001")
	d.keys("v")
	dv := d.m.dialog.(*diffView)

	// Line 3 of the layout is "-func Load(...)": a removed line has no
	// place in the new file.
	d.keys("j", "j", "j", "c")
	d.mustShow("✗ no line of the changed file here")
	if dv.editing {
		t.Fatal("c on a removed line opened the comment box")
	}
	// The next line is new line 2.
	d.keys("j", "c")
	d.mustShow("comment on config/load.go:2 · enter save · esc cancel")
	d.typeText("name it Load")
	d.keys("enter")
	d.mustShow("  ✎ 2: name it Load", "1 to send (s)")
	// c on it again edits it.
	d.keys("c")
	d.typeText(" again")
	d.keys("enter")
	d.mustShow("  ✎ 2: name it Load again")
	if len(dv.drafts) != 1 {
		t.Fatalf("drafts = %+v", dv.drafts)
	}

	// A range: V on the first new step (new line 20), two lines down, c.
	d.keys("j", "j", "j", "V", "j", "j", "c")
	d.typeText("one comment for three lines")
	d.keys("enter")
	d.mustShow("  ✎ 20-22: one comment for three lines")
	if got := dv.drafts[1]; got != (draftComment{File: "config/load.go", Line: 20, End: 22, Text: "one comment for three lines"}) {
		t.Fatalf("range draft = %+v", got)
	}
	// x inside the range removes it.
	d.keys("k", "x")
	d.mustNotShow("20-22")
	// esc in the comment box writes nothing.
	d.keys("c")
	d.typeText("never mind")
	d.keys("esc")
	d.mustNotShow("never mind")

	// Closing with a comment unsent asks once.
	d.keys("q")
	d.mustShow("1 comments not sent: s sends them; q again drops them")
	if d.m.dialog == nil {
		t.Fatal("q closed the view with a comment unsent")
	}

	// A refused review keeps the comment and says why.
	f.setErr("MessageTask", core.Errorf(core.CodeValidation, "comment 1 (config/load.go:2): the diff changed"))
	d.keys("s")
	d.mustShow("✗ comment 1 (config/load.go:2): the diff changed", "  ✎ 2: name it Load again")
	f.setErr("MessageTask", nil)

	d.keys("s")
	if len(f.messages) != 2 || len(f.messages[1].Comments) != 1 {
		t.Fatalf("messages sent = %+v", f.messages)
	}
	if got := f.messages[1].Comments[0]; got != (api.ReviewCommentInput{File: "config/load.go", Line: 2, EndLine: 2, Text: "name it Load again"}) {
		t.Fatalf("comment sent = %+v", got)
	}
	d.mustShow("review of wt0001 (1 comment): queued (position 1)", "  ● 2: name it Load again")
	d.mustNotShow("✎")
	// Nothing left to send: q closes at once.
	d.keys("q")
	if d.m.dialog != nil {
		t.Fatal("q should close the view once the review is sent")
	}
}

// The comments the task keeps are shown under their lines, open or
// outdated, with a draft beside them and the cursor's mark.
func TestGoldenDiffComments(t *testing.T) {
	f := diffFake()
	diff := f.diffs["wt0001"]
	diff.Comments = []api.ReviewComment{
		{ID: 1, File: "config/load.go", Line: 2, EndLine: 2, Text: "name it Load", State: api.ReviewOutdated},
		{ID: 2, File: "config/load.go", Line: 1, EndLine: 1, Text: "keep the package name", State: api.ReviewOpen},
	}
	f.diffs["wt0001"] = diff
	g := goldenProgram(t, f, 80, 24)
	g.waitScreen("9 tasks")
	g.keys("G")
	g.waitScreen("> └─○ Test the loader")
	g.keys("k")
	g.waitScreen("+12 −2 in 2 files (v shows them)")
	g.keys("v")
	g.waitScreen("Diff of task wt0001", "○ outdated 2: name it Load")
	g.keys("j", "j", "j", "j", "j", "c")
	g.waitScreen("comment on config/load.go:3")
	g.typeText("why?")
	g.keys("enter")
	g.waitScreen("✎ 3: why?")
	golden.RequireEqual(t, g.finalScreen())
}

// P asks before pushing the selected task's branch; y pushes (PushTask,
// origin) and the status bar says where it went; n pushes nothing.
func TestPushAsksFirst(t *testing.T) {
	f := diffFake()
	d := newDriver(t, f, 80, 24)
	d.selectTask("wt0001")
	d.keys("P")
	d.mustShow("Push task wt0001's branch?", "Rename the config loader · kandev/wt0001-rename-the-config-loader", "y push")
	d.keys("n")
	if f.callCount("PushTask") != 0 || d.m.dialog != nil {
		t.Fatalf("n should push nothing and close; calls %v", f.calls)
	}
	d.keys("P", "y")
	if f.callCount("PushTask wt0001 ") != 1 {
		t.Fatalf("y should push once to the default remote; calls %v", f.calls)
	}
	d.mustShow("pushed kandev/wt0001 to origin (0123456789ab)")
	// A refusal stays in the dialog, with what to do.
	f.setErr("PushTask", core.Errorf(core.CodeConflict, `push refused: the repository has no remote "origin"`))
	d.keys("P", "y")
	d.mustShow(`no remote "origin"`)
}

// O asks before opening a pull request (PullRequestTask); the detail pane
// shows a task's pull request URL under its branch.
func TestPullRequestAsksFirstAndShows(t *testing.T) {
	f := diffFake()
	d := newDriver(t, f, 80, 24)
	d.selectTask("wt0001")
	d.keys("O")
	d.mustShow("Open a pull request for task wt0001?", "gh must be installed and logged in", "y open pull request")
	d.keys("y")
	if f.callCount("PullRequestTask wt0001 draft=false") != 1 {
		t.Fatalf("y should open one pull request; calls %v", f.calls)
	}
	d.mustShow("pull request for wt0001: https://github.com/me/app/pull/7")

	f2 := diffFake()
	f2.mu.Lock()
	w := *f2.task("wt0001").Workspace
	w.PullRequest = "https://github.com/me/app/pull/7"
	f2.task("wt0001").Workspace = &w
	f2.mu.Unlock()
	d2 := newDriver(t, f2, 80, 24)
	d2.selectTask("wt0001")
	d2.mustShow("branch kandev/wt0001-rename-the-config-loader", "pull request https://github.com/me/app/pull/7")
}
