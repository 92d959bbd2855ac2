package daemon_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// The same idempotency key twice makes one task: the second create
// returns the first.
func TestCreateIdempotencyKey(t *testing.T) {
	d := daemontest.Start(t)
	in := api.CreateTaskInput{Title: "once", CWD: os.TempDir(), IdempotencyKey: "k-1"}
	first, err := d.Client.CreateTask(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	again, err := d.Client.CreateTask(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != first.ID {
		t.Fatalf("second create with the key made task %s, want %s", again.ID, first.ID)
	}
	other, err := d.Client.CreateTask(context.Background(), api.CreateTaskInput{Title: "once", CWD: os.TempDir(), IdempotencyKey: "k-2"})
	if err != nil || other.ID == first.ID {
		t.Fatalf("another key: task %s, %v; want a new task", other.ID, err)
	}
	if n := len(listTasks(t, d)); n != 2 {
		t.Fatalf("%d tasks, want 2", n)
	}
}

// A create committed whose reply is cut: the CLI retries once with its
// key and prints the task the first attempt made; only one exists, and
// its --start still happens.
func TestCreateRetryAfterCutReply(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_FAILPOINT=cut-after-create"))
	r := d.Run("task", "create", "cut reply", "--cwd", os.TempDir(), "--prompt", "mock: say started once", "--start", "--json")
	if r.Code != 0 {
		t.Fatalf("task create: exit %d\n%s", r.Code, r.Stderr)
	}
	if !strings.Contains(d.Log(), "failpoint: dropping the connection of a committed create") {
		t.Fatalf("the failpoint did not fire; daemon log:\n%s", d.Log())
	}
	var got core.Task
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil {
		t.Fatalf("task create --json: %v\n%s", err, r.Stdout)
	}
	tasks := listTasks(t, d)
	if len(tasks) != 1 || tasks[0].ID != got.ID {
		t.Fatalf("tasks %v after a retried create, want only %s", tasks, got.ID)
	}
	waitSaid(t, d, got.ID, "started once")
	waitSettled(t, d, got.ID)
	if n := len(prompts(conversation(t, d, got.ID))); n != 1 {
		t.Fatalf("%d prompts delivered, want 1", n)
	}
}

func listTasks(t *testing.T, d *daemontest.Daemon) []core.Task {
	t.Helper()
	tasks, err := d.Client.ListTasks(context.Background(), api.ListTasksInput{All: true})
	if err != nil {
		t.Fatal(err)
	}
	return tasks
}

// A task created with --start just before a crash starts after the
// restart; one created without --start still waits for its start.
func TestStartSurvivesCrash(t *testing.T) {
	d := daemontest.Start(t)
	idle := create(t, d, api.CreateTaskInput{Title: "not started", Prompt: "mock: say should not run"})
	d.Stop()
	d.SetEnv("KANDEV_FAILPOINT", "exit-before-start")
	d.Restart()
	_, err := d.Client.CreateTask(context.Background(), api.CreateTaskInput{Title: "started", CWD: os.TempDir(),
		Prompt: "mock: say started after the crash", Start: true})
	if err == nil {
		t.Fatal("the create answered; the failpoint should have ended the daemon first")
	}
	<-d.Exited()
	d.SetEnv("KANDEV_FAILPOINT", "")
	d.Restart()
	var started core.Task
	for _, task := range listTasks(t, d) {
		if task.Title == "started" {
			started = task
		}
	}
	if started.ID == "" {
		t.Fatal("the committed create is gone")
	}
	waitSaid(t, d, started.ID, "started after the crash")
	if got := get(t, d, idle.ID); got.Session != nil || got.Queued != 1 {
		t.Fatalf("the task created without --start: session %+v, %d queued; want it still waiting for a start", got.Session, got.Queued)
	}
}
