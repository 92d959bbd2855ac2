package cmd_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/kandev/kandev/cmd"
	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
	"github.com/kandev/kandev/core/daemonclient"
)

// `task show --json` to a pipe prints the daemon's bytes as they came (the
// --json rule), as `task list --json` does: no decoding into core.Task and
// encoding again (issue 14). With a daemon of the same build the bytes are
// what the re-encoding printed before.
func TestTaskShowJSONIsTheDaemonsBytes(t *testing.T) {
	d := daemontest.Start(t)
	task := d.CreateTask(t, api.CreateTaskInput{Title: "shown <as> & \"is\"", Description: "two\nlines"})
	out := d.MustRun("task", "show", task.ID, "--json")

	c := daemonclient.Dial(d.Home.Socket())
	defer c.Close()
	raw, err := c.GetTaskJSON(context.Background(), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(raw) {
		t.Fatalf("task show --json:\n%s\nthe daemon's reply:\n%s", out, raw)
	}
	var decoded core.Task
	if err := json.Unmarshal(raw, &decoded); err != nil {
		t.Fatal(err)
	}
	again, err := json.Marshal(decoded)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(again)+"\n" {
		t.Fatalf("task show --json:\n%s\nre-encoded as before:\n%s", out, again)
	}
}

// A daemon's field this binary does not know is kept, and a reply that is
// not JSON is refused as before.
func TestTaskShowJSONKeepsTheDaemonsFields(t *testing.T) {
	bin := daemontest.Binary(t)
	const task = `{"id":"t1","title":"one","status":"todo","from_a_newer_daemon":{"x":1}}` + "\n"
	dir := cmd.FakeDaemon(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/tasks/t1":
			_, _ = w.Write([]byte(task))
		case "/v1/tasks/bad":
			_, _ = w.Write([]byte(`{"id":"bad",`))
		default:
			http.NotFound(w, r)
		}
	})

	run := func(id string) (string, string, error) {
		cmd := exec.Command(bin, "task", "show", id, "--json")
		cmd.Env = append(os.Environ(), "KANDEV_HOME="+dir)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	out, stderr, err := run("t1")
	if err != nil || out != task {
		t.Fatalf("task show t1 --json: %v\nstdout: %q\nstderr: %s\nwant the daemon's bytes %q", err, out, stderr, task)
	}
	out, stderr, err = run("bad")
	if err == nil || out != "" || !strings.Contains(stderr, "read daemon reply to GET /v1/tasks/bad") {
		t.Fatalf("task show bad --json: %v\nstdout: %q\nstderr: %s\nwant the daemon reply refused", err, out, stderr)
	}
}
