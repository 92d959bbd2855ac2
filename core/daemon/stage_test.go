package daemon_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// shows checks the status a task is stored with and the stage it is shown
// with (core.StageOf, ADR 0070) everywhere a front end reads them: the
// daemon's task (GetTask), `kandev task list --json` (the daemon's bytes)
// and the listing's summaries, whose reader derives the stage itself. It
// is called only in states that hold still.
func shows(t *testing.T, d *daemontest.Daemon, id string, status core.Status, stage core.Stage) core.Task {
	t.Helper()
	task := get(t, d, id)
	if task.Status != status || task.Stage != stage {
		t.Fatalf("task %s: status %s stage %s, want %s and %s (assignee %+v, session %+v, stalled %+v)",
			id, task.Status, task.Stage, status, stage, task.Assignee, task.Session, task.Stalled)
	}
	var listed []struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Stage  string `json:"stage"`
	}
	if err := json.Unmarshal([]byte(d.MustRun("task", "list", "--all", "--json")), &listed); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range listed {
		if l.ID == id {
			found = true
			if l.Status != string(status) || l.Stage != string(stage) {
				t.Fatalf("task list --json: task %s status %q stage %q, want %s and %s", id, l.Status, l.Stage, status, stage)
			}
		}
	}
	if !found {
		t.Fatalf("task list --json lacks task %s", id)
	}
	sums, err := d.Client.ListTaskSummaries(context.Background(), api.ListTasksInput{All: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sums {
		if s.ID == id && s.Stage != stage {
			t.Fatalf("summary of task %s: stage %s, want %s", id, s.Stage, stage)
		}
	}
	return task
}

// A task walked through its lifecycle with a real daemon and the mock
// agent reads, at each step, as its story says: todo until its agent
// runs, in progress while it runs and while its question waits (a
// question keeps the status), to review once stopped or handed to you,
// back to you once its turn came back (its status todo, as the seed's
// rule hands it on), done at the end. A failed run escalated to you, a
// chain climbed to another person and a reached budget read back too,
// never todo.
func TestStageOverTheLifecycle(t *testing.T) {
	d := daemontest.Start(t)
	ctx := context.Background()

	task := create(t, d, api.CreateTaskInput{Title: "walk"})
	shows(t, d, task.ID, core.StatusTodo, core.StageTodo) // created

	if _, err := d.Client.StartTask(ctx, task.ID, api.StartTaskInput{Prompt: "mock: hang"}); err != nil {
		t.Fatal(err)
	}
	waitState(t, d, task.ID, core.SessionRunning)
	shows(t, d, task.ID, core.StatusInProgress, core.StageInProgress) // running

	if _, err := d.Client.StopTask(ctx, task.ID, api.StopTaskInput{}); err != nil {
		t.Fatal(err)
	}
	waitState(t, d, task.ID, core.SessionCancelled)
	if got := shows(t, d, task.ID, core.StatusReview, core.StageReview); !got.Halted { // stopped
		t.Fatalf("stopped task not halted: %+v", got)
	}

	message(t, d, task.ID, "mock: call ask_user_question_kandev "+askUserArgs("Which database?"))
	waitQuestion(t, d, task.ID)
	shows(t, d, task.ID, core.StatusInProgress, core.StageInProgress) // question

	d.MustRun("task", "answer", task.ID, "sqlite")
	daemontest.Eventually(t, wait, "the task back to you", func() bool { return get(t, d, task.ID).BackToYou() })
	waitSettled(t, d, task.ID)
	if got := shows(t, d, task.ID, core.StatusTodo, core.StageBack); got.Assignee == nil || !got.Assignee.IsOperator() { // back to you
		t.Fatalf("back to you, but with %+v", got.Assignee)
	}

	message(t, d, task.ID, call("handoff_task_kandev", map[string]any{"to": "operator", "message": "please look"}))
	daemontest.Eventually(t, wait, "the hand-off to you", func() bool {
		g := get(t, d, task.ID)
		return g.Status == core.StatusReview && g.Stalled == nil
	})
	waitSettled(t, d, task.ID)
	shows(t, d, task.ID, core.StatusReview, core.StageReview) // review

	if _, err := d.Client.SetTaskStatus(ctx, task.ID, core.StatusDone); err != nil {
		t.Fatal(err)
	}
	shows(t, d, task.ID, core.StatusDone, core.StageDone) // done

	// Escalated: a crash goes to the operator as an alarm, and reads back.
	crash := create(t, d, api.CreateTaskInput{Title: "crashy", Start: true, Prompt: "mock: crash"})
	daemontest.Eventually(t, wait, "the crash escalated", func() bool { return get(t, d, crash.ID).Escalated() })
	shows(t, d, crash.ID, core.StatusTodo, core.StageBack)

	// Escalated up a chain of roles to another person: back, with alice.
	setupChain(t, d)
	chain := create(t, d, api.CreateTaskInput{Title: "chain", Assignee: "engineer", Start: true, Prompt: "mock: say hi"})
	waitAssignee(t, d, chain.ID, "person", "alice")
	shows(t, d, chain.ID, core.StatusTodo, core.StageBack)

	// Budget: the tree spent it; its running turn is stopped and the task
	// goes to a person.
	spent := create(t, d, api.CreateTaskInput{Title: "spender", Start: true, Budget: "1USD", Prompt: "mock: usage 10 10 2\nmock: hang"})
	daemontest.Eventually(t, wait, "the budget reached", func() bool {
		g := get(t, d, spent.ID)
		return g.OverBudget() && g.Assignee != nil && g.Assignee.IsPerson() && g.Session != nil && !g.Session.State.Live()
	})
	shows(t, d, spent.ID, core.StatusTodo, core.StageBack)
}
