package tui

import (
	"context"
	"testing"

	"github.com/kandev/kandev/core"
)

// summaryClient is the fake with core.TaskSummaries, as the daemon client
// has it: its listing leaves out what a row does not show (here the
// description and the session's error), GetTask has everything.
type summaryClient struct {
	*fakeClient
}

func (c summaryClient) ListTaskSummaries(ctx context.Context, in core.ListTasksInput) ([]core.Task, error) {
	if err := c.record("ListTaskSummaries"); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]core.Task, len(c.tasks))
	for i, t := range c.tasks {
		t.Description = ""
		if t.Session != nil {
			s := *t.Session
			s.Error = ""
			t.Session = &s
		}
		out[i] = t
	}
	return out, nil
}

func (c summaryClient) GetTask(ctx context.Context, id string) (core.Task, error) {
	if err := c.record("GetTask " + id); err != nil {
		return core.Task{}, err
	}
	if t := c.task(id); t != nil {
		return *t, nil
	}
	return core.Task{}, core.Errorf(core.CodeNotFound, "task %s not found", id)
}

func newSummaryDriver(t *testing.T, f *fakeClient, w, h int) *driver {
	t.Helper()
	return startDriver(t, summaryClient{f}, f, w, h)
}

// TestTreeLoadsSummariesAndTheSelectedTaskWhole: with a client that lists
// summaries, the tree is built from them (never from whole tasks), and the
// detail pane loads only the selected task whole: its description and
// its run's error show.
func TestTreeLoadsSummariesAndTheSelectedTaskWhole(t *testing.T) {
	tasks := demoTasks()
	for i := range tasks {
		if tasks[i].ID == "kid003" {
			tasks[i].Description = "Only the whole task has this description."
		}
	}
	f := newFake(tasks...)
	d := newSummaryDriver(t, f, 120, 40)
	if n := f.callCount("ListTasks"); n != 0 {
		t.Fatalf("the tree listed whole tasks %d times; it should list summaries", n)
	}
	if f.callCount("ListTaskSummaries") != 1 {
		t.Fatalf("calls: %v", f.calls)
	}
	d.mustShow("Extract the token store", "Write the migration", "ESCALATED")
	first := d.m.tree.selected
	if f.callCount("GetTask "+first) != 1 {
		t.Fatalf("the first selected task %s should be loaded whole once; calls: %v", first, f.calls)
	}

	d.selectTask("kid003")
	d.mustShow("Only the whole task has this description.", "agent exited with status 3")
	if n := f.callCount("GetTask "); n > len(d.m.tree.rows) {
		t.Fatalf("%d task loads for %d rows", n, len(d.m.tree.rows))
	}
	if f.callCount("GetTask kid003") != 1 {
		t.Fatalf("kid003 loaded %d times; calls: %v", f.callCount("GetTask kid003"), f.calls)
	}

	// A live event brings the whole task: no load needed when selected.
	upd := tasks[len(tasks)-1]
	upd.Description = "Changed while you looked elsewhere."
	d.f.push(core.Event{Type: core.EventTaskUpdated, TaskID: upd.ID, Task: &upd})
	d.settle()
	d.selectTask(upd.ID)
	d.mustShow("Changed while you looked elsewhere.")
	if n := f.callCount("GetTask " + upd.ID); n != 0 {
		t.Fatalf("%s was loaded %d times though an event brought it whole", upd.ID, n)
	}
}
