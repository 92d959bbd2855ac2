package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// TestRestartListsTheSameTasks: the first list after a start, answered
// from what the start loaded, is byte for byte the list the daemon served
// before its restart, whose tasks it kept from each change: every task,
// archived and finished ones too, with its session, blockers and a
// description holding the separator the load cuts rows on. The home
// holds enough tasks for the load to read the table in parallel.
func TestRestartListsTheSameTasks(t *testing.T) {
	dir, err := os.MkdirTemp("", "kd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if _, err := daemontest.SeedTasks(filepath.Join(dir, "kandev.db"), 21_000); err != nil {
		t.Fatal(err)
	}
	d := daemontest.Start(t, daemontest.WithHome(dir))
	ctx := context.Background()
	cwd := t.TempDir()
	parent := create(t, d, api.CreateTaskInput{Title: "parent", CWD: cwd,
		Description: "a unit\x1fseparator, a NUL\x00 and \"quotes\"\nover two lines"})
	child := create(t, d, api.CreateTaskInput{Title: "child", CWD: cwd, ParentID: parent.ID})
	blocker := create(t, d, api.CreateTaskInput{Title: "blocker", CWD: cwd})
	blocked := create(t, d, api.CreateTaskInput{Title: "blocked", CWD: cwd})
	if _, err := d.Client.BlockTask(ctx, blocked.ID, api.BlockInput{On: []string{blocker.ID, child.ID}}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Client.SetTaskStatus(ctx, child.ID, core.StatusDone); err != nil {
		t.Fatal(err)
	}
	archived := create(t, d, api.CreateTaskInput{Title: "archived", CWD: cwd})
	if _, err := d.Client.SetTaskStatus(ctx, archived.ID, core.StatusCancelled); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Client.ArchiveTask(ctx, archived.ID, api.ArchiveTaskInput{}); err != nil {
		t.Fatal(err)
	}
	ran := create(t, d, api.CreateTaskInput{Title: "ran", CWD: cwd, Start: true, Prompt: "mock: say done"})
	// Their runs end, so the restart has nothing to recover: a top-level
	// run that never reports is escalated to the operator, and the
	// blocked task's run, started by its block, waits until stopped.
	waitIdle(t, d, blocked.ID)
	if _, err := d.Client.StopTask(ctx, blocked.ID, api.StopTaskInput{}); err != nil {
		t.Fatal(err)
	}
	daemontest.Eventually(t, wait, "the runs to end", func() bool {
		for _, id := range []string{parent.ID, child.ID, blocker.ID, blocked.ID, archived.ID, ran.ID} {
			tk := get(t, d, id)
			if tk.Session != nil && tk.Session.State != core.SessionCompleted && tk.Session.State != core.SessionFailed &&
				tk.Session.State != core.SessionCancelled {
				return false
			}
		}
		return get(t, d, ran.ID).Session != nil
	})

	var before bytes.Buffer
	if err := d.Client.ListTasksRaw(ctx, api.ListTasksInput{All: true}, &before); err != nil {
		t.Fatal(err)
	}
	d.Stop()
	d.Restart()
	var after bytes.Buffer
	if err := d.Client.ListTasksRaw(ctx, api.ListTasksInput{All: true}, &after); err != nil {
		t.Fatal(err)
	}
	var tasks []core.Task
	if err := json.Unmarshal(after.Bytes(), &tasks); err != nil {
		t.Fatal(err)
	}
	byID := map[string]core.Task{}
	for _, tk := range tasks {
		byID[tk.ID] = tk
	}
	if len(tasks) != 21_006 || !byID[archived.ID].Archived || byID[ran.ID].Session == nil ||
		len(byID[blocked.ID].BlockedBy) != 1 || byID[parent.ID].Description != "a unit\x1fseparator, a NUL\x00 and \"quotes\"\nover two lines" {
		t.Fatalf("after the restart: %d tasks, archived %+v, ran %+v, blocked %+v, parent %q", len(tasks),
			byID[archived.ID], byID[ran.ID].Session, byID[blocked.ID].BlockedBy, byID[parent.ID].Description)
	}
	if !bytes.Equal(before.Bytes(), after.Bytes()) {
		b, a := before.String(), after.String()
		i := 0
		for i < len(b) && i < len(a) && b[i] == a[i] {
			i++
		}
		lo := max(0, i-300)
		t.Fatalf("the list changed across the restart, at byte %d:\n before …%s\n after  …%s", i,
			b[lo:min(len(b), i+300)], a[lo:min(len(a), i+300)])
	}
}
