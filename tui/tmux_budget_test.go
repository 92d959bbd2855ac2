package tui_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// TestTmuxRaiseBudgetContinue: a tree its $1 budget stopped is raised from
// the UI ($, +5USD, then the cut turn's choice: continue); its agent gets
// the short note to go on, and the tree is no longer held (issue 37).
func TestTmuxRaiseBudgetContinue(t *testing.T) {
	needTmux(t)
	d := daemontest.Start(t)
	ctx := context.Background()
	gate := filepath.Join(t.TempDir(), "gate")
	root := createTask(t, d, api.CreateTaskInput{Title: "Spendy", Start: true, Budget: "1USD",
		Prompt: "mock: usage 10 10 1.1\nmock: waitfile " + gate + "\nmock: say cut-done"})
	daemontest.Eventually(t, 20*time.Second, "the tree held by its budget", func() bool {
		r, err := d.Client.GetTask(ctx, root.ID)
		return err == nil && r.OverBudget() && r.Session != nil && r.Session.State == core.SessionCancelled
	})
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	s := startTmux(t, d, 80, 30)
	s.waitRow(root.ID, "BUDGET")
	s.selectRow(root.ID)
	s.keys("$")
	s.waitText("Budget of task "+root.ID, "now $1.10 of $1.00 spent")
	s.text("+5USD")
	s.keys("Enter")
	s.waitText("1) drop", "2) redeliver", "3) continue")
	s.keys("3", "Enter")
	s.waitText("of $6.00 spent")
	daemontest.Eventually(t, 20*time.Second, "the continue note delivered", func() bool {
		for _, m := range d.Conversation(t, root.ID) {
			if m.Kind == core.MsgPrompt && strings.Contains(m.Text, "[kandev:budget] Your last turn") {
				return true
			}
		}
		return false
	})
	r, err := d.Client.GetTask(ctx, root.ID)
	if err != nil || r.OverBudget() || r.Budget == nil || r.Budget.Amount.Value != 6 {
		t.Fatalf("after the raise: err %v task %+v budget %+v", err, r.Stalled, r.Budget)
	}
	s.keys("q")
	s.waitText("kandev exited with status 0")
}
