package cmd

import (
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
)

// TestTaskTree: rows nest under their parents in list order, whatever
// order the list gives (a child before its parent too); a task whose
// parent is not listed is a root; a limit cuts the tree after N rows in
// the order they print; fields are cleaned of terminal controls.
func TestTaskTree(t *testing.T) {
	task := func(id, parent, title string, st core.Status) core.Task {
		return core.Task{ID: id, ParentID: parent, Title: title, Status: st, Profile: "mock"}
	}
	tasks := []core.Task{
		task("c1aaaa", "r1aaaa", "child listed first", core.StatusTodo),
		task("r1aaaa", "", "root", core.StatusInProgress),
		task("c2aaaa", "r1aaaa", "second child", core.StatusDone),
		task("g1aaaa", "c1aaaa", "grandchild \x1b]52;c;bad\x07title", core.StatusReview),
		task("o1aaaa", "gone00", "orphan", core.StatusTodo),
		task("long-id-over-8-bytes", "", "long id", core.StatusTodo),
		task("k1aaaa", "long-id-over-8-bytes", "under a long id", core.StatusCancelled),
	}
	want := strings.Join([]string{
		"● in_progress r1aaaa root  [mock]",
		"├─ ○ todo        c1aaaa child listed first  [mock]",
		"│  └─ ◐ review      g1aaaa grandchild title  [mock]",
		"└─ ✓ done        c2aaaa second child  [mock]",
		"○ todo        o1aaaa orphan  [mock]",
		"○ todo        long-id-over-8-bytes long id  [mock]",
		"└─ ✗ cancelled   k1aaaa under a long id  [mock]",
	}, "\n") + "\n"
	var b strings.Builder
	writeTree(&b, tasks)
	if b.String() != want {
		t.Fatalf("tree:\n%s\nwant:\n%s", b.String(), want)
	}

	var tr taskTree
	tr.grow(len(tasks))
	for i := range tasks {
		tr.add(&tasks[i])
	}
	b.Reset()
	n, err := tr.write(&b, 3)
	if err != nil || n != 3 {
		t.Fatalf("limit 3: printed %d, %v", n, err)
	}
	if lines := strings.SplitAfter(want, "\n"); b.String() != strings.Join(lines[:3], "") {
		t.Fatalf("limit 3:\n%s", b.String())
	}
}

// TestTaskDetailChildQuestions: task show lists the questions waiting on a
// parent, the one its escalation names first, and says whose they are.
func TestTaskDetailChildQuestions(t *testing.T) {
	op := core.OperatorRef()
	task := core.Task{ID: "p1aaaa", Title: "parent", Status: core.StatusInProgress, Assignee: &op,
		ChildQuestions: []core.ChildQuestion{
			{TaskID: "bbbbbb", TaskTitle: "pick the database", Named: true,
				Question: core.QuestionInfo{ID: "qb", Kind: core.QuestionParent, Text: "Which database?"}},
			{TaskID: "aaaaaa", TaskTitle: "pick the size",
				Question: core.QuestionInfo{ID: "qa", Kind: core.QuestionParent, Text: "Which size?"}},
		}}
	var b strings.Builder
	writeTaskDetail(&b, task)
	out := b.String()
	want := strings.Join([]string{
		"questions to it:  2 from subtasks, yours to answer while it is with you: kandev task answer p1aaaa TEXT answers the first",
		"                  1. qb from subtask bbbbbb (pick the database), the one its escalation names",
		"                     Which database?",
		"                  2. qa from subtask aaaaaa (pick the size)",
		"                     Which size?",
	}, "\n")
	if !strings.Contains(out, want) {
		t.Fatalf("task show:\n%s\nwant in it:\n%s", out, want)
	}
	role := core.RoleRef("eng")
	task.Assignee = &role
	b.Reset()
	writeTaskDetail(&b, task)
	if !strings.Contains(b.String(), "2 from subtasks, its agent answers them") {
		t.Fatalf("with its role:\n%s", b.String())
	}
}
