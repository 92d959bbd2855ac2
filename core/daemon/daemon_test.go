package daemon_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

func TestMain(m *testing.M) { daemontest.Main(m) }

func TestTurnEndToEnd(t *testing.T) {
	d := daemontest.Start(t)
	ctx := context.Background()
	task, err := d.Client.CreateTask(ctx, api.CreateTaskInput{Title: "hello", Prompt: "mock: say hi", CWD: os.TempDir(), Start: true})
	if err != nil {
		t.Fatal(err)
	}
	daemontest.Eventually(t, 20*time.Second, "turn to end", func() bool {
		tk, _ := d.Client.GetTask(ctx, task.ID)
		return tk.Session != nil && !tk.Session.State.Live() && tk.Status != core.StatusInProgress
	})
	page, err := d.Client.Conversation(ctx, task.ID, api.ConversationInput{})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	var said string
	for _, m := range page.Messages {
		kinds = append(kinds, string(m.Kind))
		if m.Kind == core.MsgAgent {
			said = m.Text
		}
	}
	if strings.TrimSpace(said) != "hi" {
		t.Fatalf("agent said %q; conversation kinds %v", said, kinds)
	}
	out := d.MustRun("task", "log", task.ID)
	if !strings.Contains(out, "agent › hi") {
		t.Fatalf("task log:\n%s", out)
	}
}
