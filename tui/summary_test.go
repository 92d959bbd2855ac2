package tui

import (
	"context"
	"fmt"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// summaryClient is the fake with api.TaskSummaries, as the daemon client
// has it: its listing leaves out what a row does not show (here the
// description and the session's error), GetTask has everything.
type summaryClient struct {
	*fakeClient
}

func (c summaryClient) ListTaskSummaries(ctx context.Context, in api.ListTasksInput) ([]core.Task, error) {
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

// streamClient is summaryClient over a slow listing: the first rows come
// at once, the rest of the listing (and the whole listing) wait at the
// fake's gate, as its Conversation calls do.
type streamClient struct {
	summaryClient
}

// hold waits at the fake's gate. It runs in the listing's own goroutine,
// not in a command, so it is not counted as gated: the driver counts the
// command that waits for the rest of the listing instead (restPending).
func (c streamClient) hold(ctx context.Context) error {
	c.mu.Lock()
	gate := c.gate
	c.mu.Unlock()
	if gate == nil {
		return nil
	}
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c streamClient) ListTaskSummaries(ctx context.Context, in api.ListTasksInput) ([]core.Task, error) {
	if err := c.hold(ctx); err != nil {
		return nil, err
	}
	return c.summaryClient.ListTaskSummaries(ctx, in)
}

func (c streamClient) StreamTaskSummaries(ctx context.Context, in api.ListTasksInput, n int, first func([]core.Task)) ([]core.Task, error) {
	ts, err := c.summaryClient.ListTaskSummaries(ctx, in)
	if err != nil {
		return nil, err
	}
	first(ts[:min(n, len(ts)):min(n, len(ts))])
	if err := c.hold(ctx); err != nil {
		return nil, err
	}
	return ts, nil
}

// TestTreeDrawsFirstRowsBeforeTheWholeListing: at 100,000 tasks reading
// the listing is most of the start; the tree draws its first rows as soon
// as they are read and fills in the rest when it arrives. Events that come
// meanwhile apply on top of the whole listing.
func TestTreeDrawsFirstRowsBeforeTheWholeListing(t *testing.T) {
	var tasks []core.Task
	for i := range firstRows + 100 {
		tasks = append(tasks, core.Task{ID: fmt.Sprintf("t%04d", i), Title: fmt.Sprintf("Row %d of the listing", i),
			Status: core.StatusTodo, Profile: "claude", CreatedAt: testNow, UpdatedAt: testNow})
	}
	f := newFake(tasks...)
	f.gate = make(chan struct{})
	d := startDriver(t, streamClient{summaryClient{f}}, f, 120, 40)
	d.mustShow("Row 0 of the listing", "Row 1 of the listing", "Row 20 of the listing")
	if n := d.m.tasks.len(); n != firstRows {
		t.Fatalf("before the whole listing the store holds %d tasks, want the first %d", n, firstRows)
	}

	// An event while the rest is on its way waits for it.
	upd := tasks[len(tasks)-1]
	upd.Title = "Renamed while loading"
	d.f.push(core.Event{Type: core.EventTaskUpdated, TaskID: upd.ID, Task: &upd})
	d.settle()
	f.mu.Lock()
	close(f.gate)
	f.mu.Unlock()
	d.settle()
	if n := d.m.tasks.len(); n != len(tasks) {
		t.Fatalf("after the whole listing the store holds %d tasks, want %d", n, len(tasks))
	}
	if got := d.m.tasks.get(upd.ID); got == nil || got.Title != "Renamed while loading" {
		t.Fatalf("the event during the load was lost: %+v", got)
	}
}
