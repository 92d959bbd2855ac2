package daemon_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// TestTaskSummariesMatchTheListing: through the real daemon, the summary
// listing (the TUI's and the text list's) says of every task what the
// whole listing says of it, with tasks in every shape a row shows: a
// pending parent question, a failed run escalated, a plain task, an
// archived one (with --all).
func TestTaskSummariesMatchTheListing(t *testing.T) {
	d := daemontest.Start(t)
	ctx := context.Background()
	// A child created after a later top-level task: creation order and
	// the tree's order differ.
	treeA := create(t, d, api.CreateTaskInput{Title: "tree A"})
	create(t, d, api.CreateTaskInput{Title: "tree B"})
	create(t, d, api.CreateTaskInput{Title: "A's child", ParentID: treeA.ID})
	// A child whose parent is archived is top-level in the default
	// listing, at its own place in creation order.
	archivedParent := create(t, d, api.CreateTaskInput{Title: "archived parent"})
	create(t, d, api.CreateTaskInput{Title: "tree C"})
	orphan := create(t, d, api.CreateTaskInput{Title: "orphan", ParentID: archivedParent.ID})
	if _, err := d.Client.ArchiveTask(ctx, archivedParent.ID, api.ArchiveTaskInput{}); err != nil {
		t.Fatal(err)
	}
	if get(t, d, orphan.ID).Archived {
		t.Fatal("archiving a parent archived its child; the orphan case needs another setup")
	}
	create(t, d, api.CreateTaskInput{Title: "plain\ttab and \\ backslash \x1b[31m escape"})
	failed := create(t, d, api.CreateTaskInput{Title: "fails", Start: true, Prompt: "mock: fail boom"})
	parent := create(t, d, api.CreateTaskInput{Title: "parent", Start: true, Prompt: call("create_task_kandev",
		map[string]any{"title": "child", "autopilot": true, "prompt": askParent("Which colour?")})})
	gone := create(t, d, api.CreateTaskInput{Title: "archived"})
	if _, err := d.Client.ArchiveTask(ctx, gone.ID, api.ArchiveTaskInput{}); err != nil {
		t.Fatal(err)
	}
	var child string
	daemontest.Eventually(t, wait, "the child to ask its parent", func() bool {
		ts, _ := d.Client.ListTasks(ctx, api.ListTasksInput{Root: parent.ID})
		if len(ts) == 2 && ts[1].PendingQuestion != nil {
			child = ts[1].ID
			return true
		}
		return false
	})
	daemontest.Eventually(t, wait, "the failed run to be recorded", func() bool {
		s := get(t, d, failed.ID).Session
		return s != nil && s.State == core.SessionFailed
	})
	waitSettled(t, d, parent.ID)

	// Agents may still be finishing turns (the child's ends by itself after
	// its question), so a comparison counts only when the whole listing
	// read before and after the summaries is the same: nothing changed in
	// between.
	list := func(in api.ListTasksInput) []core.Task {
		t.Helper()
		whole, err := d.Client.ListTasks(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		return whole
	}
	for _, in := range []api.ListTasksInput{{}, {All: true}, {Root: parent.ID}} {
		var whole, sums []core.Task
		daemontest.Eventually(t, wait, "a listing that holds still", func() bool {
			before := list(in)
			var err error
			sums, err = d.Client.ListTaskSummaries(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			whole = list(in)
			return reflect.DeepEqual(before, whole)
		})
		if len(sums) != len(whole) {
			t.Fatalf("%+v: %d summaries, %d tasks", in, len(sums), len(whole))
		}
		// The summaries come in the tree's order (TreeSnapshot), the
		// listing in creation order.
		tree := treeOrder(whole)
		for i := range tree {
			if want := daemon.SummaryOf(t, tree[i]); !reflect.DeepEqual(sums[i], want) {
				t.Errorf("%+v: line %d, task %s:\n got %#v\nwant %#v", in, i, tree[i].ID, sums[i], want)
			}
		}
	}
	all, _ := d.Client.ListTaskSummaries(ctx, api.ListTasksInput{All: true})
	var seen []string
	for _, s := range all {
		seen = append(seen, s.ID)
		switch s.ID {
		case child:
			if s.PendingQuestion == nil || s.PendingQuestion.Kind != core.QuestionParent {
				t.Errorf("the child's summary lacks its parent question: %+v", s.PendingQuestion)
			}
		case gone.ID:
			if !s.Archived {
				t.Error("the archived task's summary is not archived")
			}
		}
	}
	if !strings.Contains(strings.Join(seen, " "), gone.ID) {
		t.Fatalf("--all summaries lack the archived task: %v", seen)
	}
}

// treeOrder is the order a tree shows tasks listed in creation order:
// each top-level task (no parent in the listing), then its subtree depth
// first, children in creation order.
func treeOrder(tasks []core.Task) []core.Task {
	in := map[string]bool{}
	kids := map[string][]core.Task{}
	for _, t := range tasks {
		in[t.ID] = true
		kids[t.ParentID] = append(kids[t.ParentID], t)
	}
	var out []core.Task
	var walk func(t core.Task)
	walk = func(t core.Task) {
		out = append(out, t)
		for _, k := range kids[t.ID] {
			walk(k)
		}
	}
	for _, t := range tasks {
		if t.ParentID == "" || !in[t.ParentID] {
			walk(t)
		}
	}
	return out
}
