package daemonclient

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/wire"
)

// Tasks is the client's tasks area: a task's life (create, list, show,
// edit, status, stop, archive, handoff, blockers) and the listings' raw,
// summary and streamed forms.
type Tasks struct{ c *caller }

var _ api.TaskClient = (*Tasks)(nil)

// CreateTask implements api.TaskClient.
func (t *Tasks) CreateTask(ctx context.Context, in api.CreateTaskInput) (core.Task, error) {
	return call(ctx, t.c, wire.CreateTask, in)
}

// ListTasks implements api.TaskClient.
func (t *Tasks) ListTasks(ctx context.Context, in api.ListTasksInput) ([]core.Task, error) {
	return call(ctx, t.c, wire.ListTasks, wire.ListQuery(in))
}

// TaskStats implements api.TaskClient.
func (t *Tasks) TaskStats(ctx context.Context, in api.ListTasksInput) (api.TaskStats, error) {
	return call(ctx, t.c, wire.TaskStats, wire.ListQuery(in))
}

// ListTasksRaw streams the daemon's JSON array of tasks unchanged, for
// `task list --json`: no decode and re-encode on the way through.
func (t *Tasks) ListTasksRaw(ctx context.Context, in api.ListTasksInput, w io.Writer) error {
	resp, err := t.c.send(ctx, "GET", listPath(in), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	return err
}

// ListTaskSummaries implements api.TaskSummaries: the listing with only
// what a tree row shows, in the compact encoding of core/wire.
func (t *Tasks) ListTaskSummaries(ctx context.Context, in api.ListTasksInput) ([]core.Task, error) {
	return t.StreamTaskSummaries(ctx, in, 0, nil)
}

// StreamTaskSummaries implements api.TaskSummaryStream.
func (t *Tasks) StreamTaskSummaries(ctx context.Context, in api.ListTasksInput, n int, first func([]core.Task)) ([]core.Task, error) {
	p := strings.Replace(listPath(in), "/v1/tasks", "/v1/task-summaries", 1)
	resp, err := t.c.send(ctx, "GET", p, nil)
	var e *core.Error
	if errors.As(err, &e) && e.Code == core.CodeInternal && strings.HasPrefix(e.Message, "daemon answered 404 ") {
		// A daemon older than this binary has no such route.
		ts, err := t.ListTasks(ctx, in)
		if err == nil && first != nil {
			first(ts[:min(n, len(ts))])
		}
		return ts, err
	}
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return wire.ReadTaskSummaries(resp.Body, n, first)
}

func listPath(in api.ListTasksInput) string {
	path, _ := wire.ListTasks.Request(wire.ListQuery(in))
	return path
}

// ScanTaskSummaries is ListTaskSummaries one task at a time: fn gets each
// task as its line is decoded, and must copy what it keeps (the task is
// reused). The text task list reads 100,000 tasks this way without holding
// them.
func (t *Tasks) ScanTaskSummaries(ctx context.Context, in api.ListTasksInput, count func(n int), fn func(*core.Task) error) error {
	p := strings.Replace(listPath(in), "/v1/tasks", "/v1/task-summaries", 1)
	resp, err := t.c.send(ctx, "GET", p, nil)
	var e *core.Error
	if errors.As(err, &e) && e.Code == core.CodeInternal && strings.HasPrefix(e.Message, "daemon answered 404 ") {
		// A daemon older than this binary has no such route.
		ts, err := t.ListTasks(ctx, in)
		if err != nil {
			return err
		}
		if count != nil {
			count(len(ts))
		}
		for i := range ts {
			if err := fn(&ts[i]); err != nil {
				return err
			}
		}
		return nil
	}
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return wire.ScanTaskSummaries(resp.Body, count, fn)
}

// GetTaskJSON returns the daemon's JSON of one task as it came, checked to
// be JSON: `task show --json` prints it without decoding it into a
// core.Task and encoding it again, which cost a short command ~0.5 ms of
// cold reflection (issue 14).
func (t *Tasks) GetTaskJSON(ctx context.Context, id string) ([]byte, error) {
	path, _ := wire.GetTask.Request(wire.Key(id))
	resp, err := t.c.send(ctx, wire.GetTask.Method, path, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && !json.Valid(b) {
		err = errors.New("not a JSON value")
	}
	if err != nil {
		return nil, core.Errorf(core.CodeInternal, "read daemon reply to GET %s: %v", path, err)
	}
	return b, nil
}

// GetTask implements api.TaskClient.
func (t *Tasks) GetTask(ctx context.Context, id string) (core.Task, error) {
	return call(ctx, t.c, wire.GetTask, wire.Key(id))
}

// EditTask implements api.TaskClient.
func (t *Tasks) EditTask(ctx context.Context, id string, in api.EditTaskInput) (core.Task, error) {
	return call(ctx, t.c, wire.EditTask, wire.Keyed[api.EditTaskInput]{Key: id, In: in})
}

// ArchiveTask implements api.TaskClient.
func (t *Tasks) ArchiveTask(ctx context.Context, id string, in api.ArchiveTaskInput) (core.Task, error) {
	return call(ctx, t.c, wire.ArchiveTask, wire.WithOptions(id, in))
}

// SetTaskStatus implements api.TaskClient.
func (t *Tasks) SetTaskStatus(ctx context.Context, id string, status core.Status) (core.Task, error) {
	return call(ctx, t.c, wire.SetTaskStatus, wire.Keyed[wire.StatusBody]{Key: id, In: wire.StatusBody{Status: status}})
}

// StopTask implements api.TaskClient.
func (t *Tasks) StopTask(ctx context.Context, id string, in api.StopTaskInput) (api.StopResult, error) {
	return call(ctx, t.c, wire.StopTask, wire.WithOptions(id, in))
}

// HandoffTask implements api.TaskClient.
func (t *Tasks) HandoffTask(ctx context.Context, id string, in api.HandoffInput) (api.HandoffResult, error) {
	return call(ctx, t.c, wire.HandoffTask, wire.Keyed[api.HandoffInput]{Key: id, In: in})
}

// BlockTask implements api.TaskClient.
func (t *Tasks) BlockTask(ctx context.Context, id string, in api.BlockInput) (core.Task, error) {
	return call(ctx, t.c, wire.BlockTask, wire.Keyed[api.BlockInput]{Key: id, In: in})
}
