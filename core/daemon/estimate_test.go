package daemon_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// Mid-turn counts (issue 37, ADR 0077): a runaway turn that streams text
// as fast as it can and reports no usage is counted by an estimate from
// what it streamed (4 bytes a token) and a token budget stops it mid-turn,
// long before its 100 MiB are out; the estimate is marked wherever it is
// shown.
func TestRunawayTurnCutByTokenBudget(t *testing.T) {
	d := daemontest.Start(t)
	root := create(t, d, api.CreateTaskInput{Title: "runaway", Start: true, Budget: "20k-tokens",
		Prompt: "mock: flood 100M\nmock: say flood-done"})
	daemontest.Eventually(t, wait, "the runaway held for its budget", func() bool { return get(t, d, root.ID).OverBudget() })
	waitState(t, d, root.ID, core.SessionCancelled)
	r := get(t, d, root.ID)
	u := r.Usage
	if u == nil || !u.Own.Estimated || u.Own.EstimatedTokens < 20000 || u.Own.Tokens != u.Own.EstimatedTokens || u.Own.Tokens > 5_000_000 {
		t.Fatalf("the runaway's usage %+v, want an estimate past 20k tokens and far below 100 MiB's 26M", u)
	}
	if r.Budget == nil || !r.Budget.Reached || !strings.Contains(r.Stalled.Detail, "of its 20k tokens budget") {
		t.Fatalf("budget %+v stalled %+v", r.Budget, r.Stalled)
	}
	if saidContains(t, d, root.ID, "flood-done") {
		t.Fatal("the runaway turn ran to its end")
	}
	w := d.Run("wait", root.ID)
	if w.Code != 17 {
		t.Fatalf("wait: exit %d %q %q", w.Code, w.Stdout, w.Stderr)
	}
	show := d.MustRun("task", "show", root.ID)
	if !strings.Contains(show, "estimated from streamed text") {
		t.Fatalf("task show does not mark the estimate:\n%s", show)
	}
	t.Logf("wait: exit %d: %s%s", w.Code, w.Stdout, w.Stderr)
	t.Logf("task show %s:\n%s", root.ID, show)
}

// The estimate is shown marked while the turn runs (task show, --json
// "estimated": true, kandev usage) and replaced by the agent's own figure
// when it comes at the turn's end (an agent that reports usage only
// then: mock: usage-at-end).
func TestEstimateReplacedByTheAgentsFigure(t *testing.T) {
	d := daemontest.Start(t)
	gate := filepath.Join(t.TempDir(), "gate")
	root := create(t, d, api.CreateTaskInput{Title: "late reporter", Start: true,
		Prompt: "mock: usage-at-end 100 500 0.02\nmock: flood 40K\nmock: waitfile " + gate + "\nmock: say reported"})
	daemontest.Eventually(t, wait, "the estimate of 40 KiB streamed", func() bool {
		u := get(t, d, root.ID).Usage
		return u != nil && u.Own.EstimatedTokens >= 10240
	})
	u := usageOf(t, d, root.ID)
	if !u.Own.Estimated || u.Own.Tokens != u.Own.EstimatedTokens || len(u.Own.Costs()) != 0 {
		t.Fatalf("mid-turn usage %+v, want only an estimate", u.Own)
	}
	show := d.MustRun("task", "show", root.ID)
	if !strings.Contains(show, "~10k (input 0, output 0), 10k estimated from streamed text") {
		t.Fatalf("task show mid-turn:\n%s", show)
	}
	var js map[string]any
	if err := json.Unmarshal([]byte(d.MustRun("task", "show", root.ID, "--json")), &js); err != nil {
		t.Fatal(err)
	}
	own := js["usage"].(map[string]any)["own"].(map[string]any)
	if own["estimated"] != true || own["estimated_tokens"].(float64) < 10240 {
		t.Fatalf("task show --json own usage %v", own)
	}
	usage := d.MustRun("usage")
	if !strings.Contains(usage, "~10k") || !strings.Contains(usage, "estimate from streamed text") {
		t.Fatalf("kandev usage mid-turn:\n%s", usage)
	}
	t.Logf("mid-turn, task show %s:\n%s", root.ID, show)
	t.Logf("mid-turn, kandev usage:\n%s", usage)

	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitSaid(t, d, root.ID, "reported")
	daemontest.Eventually(t, wait, "the agent's figure to replace the estimate", func() bool {
		u := get(t, d, root.ID).Usage
		return u != nil && u.Own.Tokens == 600 && !u.Own.Estimated
	})
	u = usageOf(t, d, root.ID)
	if u.Own.EstimatedTokens != 0 || u.Own.Input != 100 || u.Own.Output != 500 || !near(u.Own.Cost, 0.02) || u.Tree.Tokens != 600 || u.Tree.Estimated {
		t.Fatalf("after the turn: %+v", u)
	}
	show = d.MustRun("task", "show", root.ID)
	if strings.Contains(show, "estimated") || !strings.Contains(show, "600 (input 100, output 500)") {
		t.Fatalf("task show after the turn:\n%s", show)
	}
	var rep api.UsageReport
	if err := json.Unmarshal([]byte(d.MustRun("usage", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Total.Tokens != 600 || rep.Total.Estimated {
		t.Fatalf("kandev usage --json after the turn: %+v", rep.Total)
	}
	t.Logf("after the turn, task show %s:\n%s", root.ID, show)
	t.Logf("after the turn, kandev usage:\n%s", d.MustRun("usage"))
}
