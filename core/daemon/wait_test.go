package daemon_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// kandev wait returns when the task is stopped, with its own exit code
// (16), whether the stop came while it waited or before it began; and a
// cancel while it waits returns 14.
func TestWaitReturnsOnStopAndCancel(t *testing.T) {
	d := daemontest.Start(t)
	ctx := context.Background()
	task := create(t, d, api.CreateTaskInput{Title: "hangs", Start: true, Prompt: "mock: say started\nmock: hang"})
	waitSaid(t, d, task.ID, "started")
	type result struct {
		code int
		out  string
	}
	done := make(chan result, 1)
	go func() {
		r := d.Run("wait", task.ID, "--json", "--timeout", "60s")
		done <- result{r.Code, r.Stdout}
	}()
	// Whether the stop lands before the wait's first read or after (an
	// event), the outcome is the same.
	if _, err := d.Client.StopTask(ctx, task.ID, api.StopTaskInput{}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	var w waitJSON
	if err := json.Unmarshal([]byte(r.out), &w); err != nil {
		t.Fatalf("wait: exit %d %q: %v", r.code, r.out, err)
	}
	if r.code != 16 || w.Outcome != "stopped" || w.ExitCode != 16 || !strings.Contains(w.Reason, "kandev task start "+task.ID) {
		t.Fatalf("wait after stop: exit %d %+v", r.code, w)
	}
	// Already stopped: at once.
	if w2, code := waitFor(t, d, task.ID); code != 16 || w2.Outcome != "stopped" {
		t.Fatalf("wait on a stopped task: exit %d %+v", code, w2)
	}

	other := create(t, d, api.CreateTaskInput{Title: "cancelled", Start: true, Prompt: "mock: say started\nmock: hang"})
	waitSaid(t, d, other.ID, "started")
	go func() {
		r := d.Run("wait", other.ID, "--json", "--timeout", "60s")
		done <- result{r.Code, r.Stdout}
	}()
	if _, err := d.Client.SetTaskStatus(ctx, other.ID, core.StatusCancelled); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.code != 14 {
		t.Fatalf("wait after cancel: exit %d %s", r.code, r.out)
	}
}
