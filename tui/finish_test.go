package tui

import (
	"context"
	"strings"
	"testing"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// MergeTask records the call and answers as the engine does: a refusal
// set with setErr, else the merge's result.
func (f *fakeClient) MergeTask(ctx context.Context, id string, in api.MergeInput) (api.MergeResult, error) {
	call := "MergeTask " + id
	if in.Squash {
		call += " squash"
	}
	if err := f.record(call + " " + in.Message); err != nil {
		return api.MergeResult{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.diffs[id]
	r := api.MergeResult{Branch: d.Branch, Into: "main", Commit: "feedfacecafebeef0000"}
	if t := f.task(id); t != nil {
		r.Task = *t
	}
	return r, nil
}

// DiscardTask records the call and marks the task's workspace discarded.
func (f *fakeClient) DiscardTask(ctx context.Context, id string, _ api.DiscardTaskInput) (core.Task, error) {
	if err := f.record("DiscardTask " + id); err != nil {
		return core.Task{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.tasks {
		if t.ID == id {
			w := *t.Workspace
			w.Mode = core.WorkspaceDiscarded
			t.Workspace = &w
			return t, nil
		}
	}
	return core.Task{}, core.Errorf(core.CodeNotFound, "task %s not found", id)
}

func finishTask() *core.Task {
	ts := diffTasks()
	return &ts[len(ts)-2]
}

func TestMergeDialogActions(t *testing.T) {
	diff := loaderDiff()
	d := newFinishDialog(testUI(), 1, opMerge, finishTask(), &diff, nil)
	// enter merges with the default message shown.
	wantAction(t, press(t, d, "enter"), mergeTask{taskID: "wt0001",
		in: api.MergeInput{Message: "Merge branch 'kandev/wt0001-rename-the-config-loader'"}})
	// Busy: nothing more until the outcome arrives; esc does not leave it.
	wantAction(t, press(t, d, "enter", "esc"), nil)
	d.failed(core.Errorf(core.CodeConflict, "merging kandev/wt0001 into main conflicts in:\nf.txt\nresolve it in the task's worktree"))
	if v := d.view(testUI(), 70); !containsAll(strings.Join(strings.Fields(v), " "), "✗ refused: nothing changed. merging kandev/wt0001 into main conflicts in: f.txt resolve it") {
		t.Fatalf("the refusal is not shown:\n%s", v)
	}

	// tab chooses squash, whose default message is the task's title.
	d = newFinishDialog(testUI(), 2, opMerge, finishTask(), &diff, nil)
	wantAction(t, press(t, d, "tab", "enter"), mergeTask{taskID: "wt0001",
		in: api.MergeInput{Squash: true, Message: "Rename the config loader (kandev task wt0001)"}})

	// A message of one's own is kept across tab; y and n are text here.
	d = newFinishDialog(testUI(), 3, opMerge, finishTask(), &diff, nil)
	d.msg.SetValue("")
	wantAction(t, press(t, d, "yes no", "tab", "tab", "enter"), mergeTask{taskID: "wt0001", in: api.MergeInput{Message: "yes no"}})

	// esc cancels: back to the diff view it came from, or closed.
	back := newDiffView(9, finishTask())
	wantAction(t, press(t, newFinishDialog(testUI(), 4, opMerge, finishTask(), &diff, back), "esc"), backTo{d: back})
	wantAction(t, press(t, newFinishDialog(testUI(), 5, opMerge, finishTask(), &diff, nil), "esc"), closeDialog{})

	// Until the change stat is read, or when it is refused, enter confirms nothing.
	d = newFinishDialog(testUI(), 6, opMerge, finishTask(), nil, nil)
	wantAction(t, press(t, d, "enter"), nil)
	d.loaded(diffMsg{dialog: 6, err: core.Errorf(core.CodeValidation, "task wt0001's worktree was discarded")})
	wantAction(t, press(t, d, "enter"), nil)
	if v := d.view(testUI(), 70); !containsAll(v, "✗ task wt0001's worktree was discarded") {
		t.Fatalf("the stat's refusal is not shown:\n%s", v)
	}
}

func TestDiscardDialogActions(t *testing.T) {
	diff := loaderDiff()
	d := newFinishDialog(testUI(), 1, opDiscard, finishTask(), &diff, nil)
	wantAction(t, press(t, d, "y"), discardTask{taskID: "wt0001"})
	wantAction(t, press(t, d, "y"), nil)
	d.failed(core.Errorf(core.CodeConflict, "task wt0001's agent is running in the worktree; stop it first"))
	// After a refusal enter no longer confirms; y does.
	wantAction(t, press(t, d, "enter"), nil)
	wantAction(t, press(t, d, "y"), discardTask{taskID: "wt0001"})

	wantAction(t, press(t, newFinishDialog(testUI(), 2, opDiscard, finishTask(), &diff, nil), "n"), closeDialog{})
	back := newDiffView(9, finishTask())
	wantAction(t, press(t, newFinishDialog(testUI(), 3, opDiscard, finishTask(), &diff, back), "esc"), backTo{d: back})
	// A task archived done has no worktree left: only its branch goes.
	retired := finishTask()
	retired.Workspace.Mode = core.WorkspaceRetired
	v := newFinishDialog(testUI(), 5, opDiscard, retired, &diff, nil).view(testUI(), 70)
	if !containsAll(v, "worktree none: removed when the task was archived done", "The branch is deleted.") || strings.Contains(v, "Both are deleted") {
		t.Fatalf("a retired task's discard should say only the branch goes:\n%s", v)
	}
	// Nothing confirmed before the stat says what would be lost.
	wantAction(t, press(t, newFinishDialog(testUI(), 4, opDiscard, finishTask(), nil, nil), "y"), nil)
}

// The diff view's M and D open the confirmations with the diff it shows,
// returning to it on cancel.
func TestDiffViewFinishActions(t *testing.T) {
	diff := loaderDiff()
	v := newDiffView(1, finishTask())
	v.loaded(diffMsg{dialog: 1, diff: diff})
	wantAction(t, press(t, v, "M"), openFinish{op: opMerge, taskID: "wt0001", diff: v.diff, back: v})
	wantAction(t, press(t, v, "D"), openFinish{op: opDiscard, taskID: "wt0001", diff: v.diff, back: v})
}

func containsAll(s string, want ...string) bool {
	for _, w := range want {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

// From the diff view, M asks (with the branch, where it goes and the
// files), enter merges and the status bar says where it went.
func TestMergeFromDiffView(t *testing.T) {
	f := diffFake()
	d := newDriver(t, f, 80, 24)
	d.selectTask("wt0001")
	d.keys("v")
	d.mustShow("▸ config/load.go")
	d.keys("M")
	d.mustShow("Merge task wt0001's branch?", "branch   kandev/wt0001-rename-the-config-loader",
		"into     main (checked out in /home/me/app)", "changes  +12 −2 in 2 files since 0123456789ab", "config/load.go", "README.md",
		"[x] merge commit", "[ ] squash into one commit", "Message Merge branch 'kandev/wt0001-rename-the-config-loader'")
	if n := f.callCount("TaskDiff wt0001"); n != 2 {
		t.Fatalf("the confirmation should use the diff view's diff (2 reads: summary and patch), got %d", n)
	}
	// esc goes back to the diff view, nothing merged.
	d.keys("esc")
	d.mustShow("Diff of task wt0001", "▸ config/load.go")
	if n := f.callCount("MergeTask"); n != 0 {
		t.Fatalf("cancel merged: %v", f.calls)
	}
	d.keys("M", "tab", "enter")
	if n := f.callCount("MergeTask wt0001 squash Rename the config loader (kandev task wt0001)"); n != 1 {
		t.Fatalf("enter should squash with the default message once: %v", f.calls)
	}
	// The merge went through: the dialog offers to finish the task
	// (issue 22: merged work stayed on the operator's desk).
	d.mustShow("squashed kandev/wt0001-rename-the-config-loader into main (feedfacecafe)",
		"Merged task wt0001's branch", "Mark task wt0001 done and archive it?", "y/enter done and archive")
	if n := f.callCount("SetTaskStatus") + f.callCount("ArchiveTask"); n != 0 {
		t.Fatalf("nothing more happens before the operator says: %v", f.calls)
	}
	d.keys("y")
	if f.callCount("SetTaskStatus wt0001 done") != 1 || f.callCount("ArchiveTask wt0001") != 1 {
		t.Fatalf("y should mark it done, then archive it: %v", f.calls)
	}
	if d.m.dialog != nil {
		t.Fatalf("the dialog closes once the task is finished: %T", d.m.dialog)
	}
	d.mustShow("task wt0001: ✓ done, archived")
	d.mustNotShow("wt0001 mock") // it left the tree
}

// After a merge, n leaves the task as it is; a refusal of the next step
// stays in the dialog.
func TestMergeThenLeaveOrRefused(t *testing.T) {
	f := diffFake()
	d := newDriver(t, f, 80, 24)
	d.selectTask("wt0001")
	d.keys("M")
	d.mustShow("+12 −2 in 2 files")
	d.keys("enter")
	d.mustShow("Mark task wt0001 done and archive it?")
	d.keys("n")
	if d.m.dialog != nil || f.callCount("SetTaskStatus")+f.callCount("ArchiveTask") != 0 {
		t.Fatalf("n should close and change nothing: %v", f.calls)
	}
	f.setErr("ArchiveTask", core.Errorf(core.CodeConflict, "task wt0001 is running; stop it first"))
	d.keys("M")
	d.mustShow("+12 −2 in 2 files")
	d.keys("enter", "enter")
	d.mustShow("✗ refused: task wt0001 is running; stop it first")
	if _, ok := d.m.dialog.(*finishDialog); !ok {
		t.Fatalf("a refusal keeps the dialog: %T", d.m.dialog)
	}
}

// A refusal stays in the dialog, which says nothing changed and what to do.
func TestMergeRefusalShown(t *testing.T) {
	f := diffFake()
	f.setErr("MergeTask", core.Errorf(core.CodeConflict, "merging kandev/wt0001-rename-the-config-loader into main conflicts in:\nconfig/load.go\nresolve it in the task's worktree /home/me/.local/share/kandev/worktrees/app/wt0001 (merge main there) and merge again"))
	d := newDriver(t, f, 80, 24)
	d.selectTask("wt0001")
	d.keys("M")
	d.mustShow("Merge task wt0001's branch?", "+12 −2 in 2 files")
	d.keys("enter")
	d.mustShow("✗ refused: nothing changed. merging kandev/wt0001-rename-the-config-", "into main conflicts in: config/load.go resolve it in the",
		"and merge again")
	if _, ok := d.m.dialog.(*finishDialog); !ok {
		t.Fatalf("the refusal should keep the dialog open: %T", d.m.dialog)
	}
	d.keys("esc")
	if d.m.dialog != nil {
		t.Fatal("esc closes it")
	}
}

// From the tree, D reads the change stat, asks, and y discards.
func TestDiscardFromTree(t *testing.T) {
	f := diffFake()
	d := newDriver(t, f, 80, 24)
	d.selectTask("wt0001")
	d.keys("D")
	d.mustShow("Discard task wt0001's worktree and branch?",
		"worktree /home/me/.local/share/kandev/worktrees/app/wt0001", "branch   kandev/wt0001-rename-the-config-loader",
		"changes  +12 −2 in 2 files since 0123456789ab", "Both are deleted. Work on the branch that was not merged is lost", "y discard")
	d.keys("n")
	if d.m.dialog != nil || f.callCount("DiscardTask") != 0 {
		t.Fatalf("n should cancel and discard nothing: %v", f.calls)
	}
	d.keys("D", "y")
	if n := f.callCount("DiscardTask wt0001"); n != 1 {
		t.Fatalf("y should discard once: %v", f.calls)
	}
	d.mustShow("discarded worktree /home/me/.local/share/kandev/worktrees/app/wt0001 and", "branch kandev/wt0001-rename-the-config-loader of task wt0001")
	// The dialog then offers to cancel the task, whose work is gone.
	d.mustShow("Discarded task wt0001's worktree", "Cancel task wt0001 too?", "y/enter cancel it")
	d.keys("y")
	if f.callCount("SetTaskStatus wt0001 cancelled") != 1 || f.callCount("ArchiveTask") != 0 {
		t.Fatalf("y should cancel it (and not archive it): %v", f.calls)
	}
	if d.m.dialog != nil {
		t.Fatalf("the dialog closes: %T", d.m.dialog)
	}
	d.mustShow("task wt0001: ✗ cancelled")
}

// A task with no worktree of its own: the confirmation says why and
// confirms nothing.
func TestMergeSharedTaskRefused(t *testing.T) {
	f := diffFake()
	d := newDriver(t, f, 80, 24)
	d.selectTask("done01")
	d.keys("M")
	d.mustShow("Merge task done01's branch?", "✗ task done01 runs in a shared directory")
	d.keys("enter")
	if n := f.callCount("MergeTask"); n != 0 {
		t.Fatalf("nothing to merge, yet: %v", f.calls)
	}
}

func TestGoldenMergeConfirm(t *testing.T) {
	f := diffFake()
	g := goldenProgram(t, f, 80, 24)
	g.waitScreen("9 tasks")
	g.keys("G", "k")
	g.waitScreen("+12 −2 in 2 files (v shows them)")
	g.keys("M")
	g.waitScreen("Merge task wt0001's branch?", "README.md", "Message Merge branch")
	golden.RequireEqual(t, g.finalScreen())
}

func TestGoldenDiscardConfirm(t *testing.T) {
	f := diffFake()
	g := goldenProgram(t, f, 80, 24)
	g.waitScreen("9 tasks")
	g.keys("G", "k")
	g.waitScreen("+12 −2 in 2 files (v shows them)")
	g.keys("D")
	g.waitScreen("Discard task wt0001's worktree and branch?", "README.md", "y discard")
	golden.RequireEqual(t, g.finalScreen())
}

// At 80×24 the box fits the body even with many files and a long
// refusal: the explanation and then files make room, so the keys and the
// refusal (at the box's end, where the overlay would cut) always show.
func TestFinishDialogFitsTheScreen(t *testing.T) {
	diff := loaderDiff()
	for i := range 12 {
		diff.Files = append(diff.Files, api.DiffFileStat{Path: "pkg/file" + string(rune('a'+i)) + ".go", Added: i, Deleted: 1})
	}
	ui := testUI()
	for _, op := range []opKind{opMerge, opDiscard} {
		d := newFinishDialog(ui, 1, op, finishTask(), &diff, nil)
		v := d.view(ui, ui.width-4)
		if n := strings.Count(v, "\n") + 1; n > ui.body-2 {
			t.Fatalf("%s: %d lines in a body of %d:\n%s", op, n, ui.body, v)
		}
		if !strings.Contains(v, "… and ") || !strings.Contains(v, "cancel") {
			t.Fatalf("%s: the list should be cut, the keys kept:\n%s", op, v)
		}
		d.failed(core.Errorf(core.CodeConflict, "merging kandev/wt0001-rename-the-config-loader into main conflicts in:\n%s\nresolve it in the task's worktree /home/me/.local/share/kandev/worktrees/app/wt0001 (merge main there) and merge again",
			strings.Repeat("pkg/some/deep/path/file.go\n", 6)))
		v = d.view(ui, ui.width-4)
		if n := strings.Count(v, "\n") + 1; n > ui.body-2 {
			t.Fatalf("%s with a refusal: %d lines in a body of %d:\n%s", op, n, ui.body, v)
		}
		if !strings.Contains(v, "and merge again") || !strings.Contains(v, "branch   kandev/wt0001") {
			t.Fatalf("%s: the refusal and the branch should show:\n%s", op, v)
		}
	}
}
