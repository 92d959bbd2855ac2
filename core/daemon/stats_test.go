package daemon_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
	"github.com/kandev/kandev/core/wire"
)

// `kandev task stats` counts what the daemon holds: tasks by status,
// sandbox and host, the agent running, the question waiting on you, and
// the spend reported, archived tasks only with --all.
func TestTaskStats(t *testing.T) {
	d := daemontest.Start(t)
	spent := create(t, d, api.CreateTaskInput{Title: "spends", Start: true, Prompt: "mock: usage 100 20 0.01"})
	runs := create(t, d, api.CreateTaskInput{Title: "runs", Start: true, Prompt: "mock: hang"})
	asks := create(t, d, api.CreateTaskInput{Title: "asks you", Start: true, Prompt: call("ask_user_question_kandev", map[string]any{
		"questions": []map[string]any{{"prompt": "Which DB?"}},
	})})
	done := create(t, d, api.CreateTaskInput{Title: "done"})
	if _, err := d.Client.SetTaskStatus(context.Background(), done.ID, core.StatusDone); err != nil {
		t.Fatal(err)
	}
	gone := create(t, d, api.CreateTaskInput{Title: "archived"})
	if _, err := d.Client.ArchiveTask(context.Background(), gone.ID, api.ArchiveTaskInput{}); err != nil {
		t.Fatal(err)
	}
	daemontest.Eventually(t, wait, "the spend reported", func() bool { return usageOf(t, d, spent.ID).Own.Tokens == 120 })
	// Its turn ended with the task left open: it stalls to the operator.
	daemontest.Eventually(t, wait, "the finished turn's stall", func() bool { return get(t, d, spent.ID).Stalled != nil })
	waitQuestion(t, d, asks.ID)
	daemontest.Eventually(t, wait, "the hanging agent to run", func() bool { r := get(t, d, runs.ID); return r.Running() })

	var st api.TaskStats
	if err := json.Unmarshal([]byte(d.MustRun("task", "stats", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	// The breakdown by status is the listing's, counted.
	listed, err := d.Client.ListTasks(context.Background(), api.ListTasksInput{})
	if err != nil {
		t.Fatal(err)
	}
	byStatus := map[core.Status]int{}
	yourTurn, stalled := 0, 0
	for _, x := range listed {
		byStatus[x.Status]++
		if x.YourTurn {
			yourTurn++
		}
		if x.Stalled != nil {
			stalled++
		}
	}
	if st.Tasks != 4 || len(listed) != 4 || !sameCounts(st.ByStatus, byStatus) || st.ByStatus[core.StatusDone] != 1 {
		t.Errorf("tasks %d by status %v; the listing has %d by status %v", st.Tasks, st.ByStatus, len(listed), byStatus)
	}
	if !sameCounts(st.ByHost, map[string]int{"local": 4}) || !sameCounts(st.BySandbox, map[string]int{core.SandboxNone: 4}) {
		t.Errorf("by host %v, by sandbox %v", st.ByHost, st.BySandbox)
	}
	// The question is the operator's, and the finished turn of "spends"
	// stalled to the operator too.
	if st.Running != 1 || st.PendingQuestions != 1 || st.YourTurn != yourTurn || yourTurn != 2 || st.Stalled != stalled || stalled != 1 {
		t.Errorf("running %d, questions %d, your turn %d, stalled %d; want 1, 1, %d, %d", st.Running, st.PendingQuestions,
			st.YourTurn, st.Stalled, yourTurn, stalled)
	}
	if st.Spend.Tokens != 120 || !near(st.Spend.Cost, 0.01) || st.Spend.Currency != "USD" {
		t.Errorf("spend %+v", st.Spend)
	}

	if err := json.Unmarshal([]byte(d.MustRun("task", "stats", "--all", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Tasks != 5 {
		t.Errorf("--all: %d tasks, want 5", st.Tasks)
	}
	if err := json.Unmarshal([]byte(d.MustRun("task", "stats", "--root", asks.ID, "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Tasks != 1 || st.PendingQuestions != 1 || st.Running != 0 {
		t.Errorf("--root: %+v", st)
	}

	text := d.MustRun("task", "stats")
	for _, want := range []string{`(?m)^tasks +4$`, `(?m)^running +1$`, `(?m)^questions +1 pending$`, `(?m)^host +local 4$`,
		`(?m)^status +.*done 1`, `(?m)^spend +120 tokens, \$0\.01$`} {
		if !regexp.MustCompile(want).MatchString(text) {
			t.Errorf("text stats do not match %s:\n%s", want, text)
		}
	}
}

func sameCounts[K comparable](a, b map[K]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, n := range a {
		if b[k] != n {
			return false
		}
	}
	return true
}

// Every row of the operation table is served by the daemon: a request to
// its method and path reaches its handler (an error from the engine at
// most), never the catch-all's "no such route".
func TestEveryOperationIsRouted(t *testing.T) {
	d := daemontest.Start(t)
	hc := rawClient(t, d)
	wild := regexp.MustCompile(`\{[a-z]+\}`)
	for _, row := range wire.Ops() {
		path := wild.ReplaceAllString(row.Path, "nosuch")
		req, err := http.NewRequest(row.Method, "http://kandev"+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", row.Method, path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), "no such route") {
			t.Errorf("%s (%s %s) is not routed: %s", row.Name, row.Method, row.Path, b)
		}
	}
}

// rawClient speaks HTTP to the daemon's socket with no kandev client in
// between, as an older (or a foreign) client would.
func rawClient(t *testing.T, d *daemontest.Daemon) *http.Client {
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "unix", d.Home.Socket())
	}}}
	t.Cleanup(hc.CloseIdleConnections)
	return hc
}

// The requests clients sent before the operation table are answered as
// they were: the same bodies read, the same refusals in the same words,
// codes and statuses.
func TestRequestsBeforeTheTableStillServed(t *testing.T) {
	d := daemontest.Start(t)
	hc := rawClient(t, d)
	task := create(t, d, api.CreateTaskInput{Title: "old client"})
	do := func(method, path, body string) (int, string) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, "http://kandev"+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	for _, c := range []struct {
		method, path, body string
		status             int
		want               string // a regexp the reply matches
	}{
		{"POST", "/v1/tasks/" + task.ID + "/status", `{"status":"review"}`, 200, `"status":"review"`},
		{"POST", "/v1/tasks/" + task.ID + "/status", `{"status":"review","x":1}`, 400,
			`^\{"error":\{"code":"VALIDATION_ERROR","message":"bad request body: json: unknown field \\"x\\""\}\}$`},
		{"GET", "/v1/tasks/" + task.ID + "/conversation?after=x", "", 400,
			`^\{"error":\{"code":"VALIDATION_ERROR","message":"after: \\"x\\" is not a number"\}\}$`},
		{"GET", "/v1/tasks/" + task.ID + "/conversation?after=0&limit=1", "", 200, `"task_id":"` + task.ID + `"`},
		{"GET", "/v1/usage?since=yesterday", "", 400, `since \\"yesterday\\" is not an RFC 3339 time`},
		{"GET", "/v1/tasks/nosuch", "", 404, `^\{"error":\{"code":"NOT_FOUND"`},
		// A verb that takes no body never read one.
		{"POST", "/v1/tasks/" + task.ID + "/archive", `not json`, 200, `"archived":true`},
		{"POST", "/v1/persons", `{"name":"ann"}`, 200, `"name":"ann"`},
		{"PUT", "/v1/profiles/renamed", `{"name":"other","command":"true"}`, 200, `"name":"renamed"`},
		{"GET", "/v1/tasks?all=1", "", 200, `^\[\{`},
		{"DELETE", "/v1/tasks/" + task.ID, "", 404, `no such route: DELETE /v1/tasks/`},
	} {
		status, body := do(c.method, c.path, c.body)
		if status != c.status || !regexp.MustCompile(c.want).MatchString(body) {
			t.Errorf("%s %s %s: %d %s; want %d matching %s", c.method, c.path, c.body, status, body, c.status, c.want)
		}
	}
}
