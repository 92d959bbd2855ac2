package daemonclient

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// TestRequestsGolden records what every method sends, one line per
// request (method, path and query, content type, body), and compares it
// with testdata/requests.golden, recorded from the client before the
// operation table (core/wire): old daemons get from this client exactly
// what they always read (the lines after it pin the operations added since).
// An empty key is refused before anything is sent.
func TestRequestsGolden(t *testing.T) {
	dir, err := os.MkdirTemp("", "kdrec") // short: a socket path is at most 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var out bytes.Buffer
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		fmt.Fprintf(&out, "%s %s ct=%q body=%s\n", r.Method, r.URL.RequestURI(), r.Header.Get("Content-Type"), b)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, "{}")
	})}
	go srv.Serve(ln)
	defer srv.Close()
	c := Dial(sock)
	defer c.Close()
	ctx := context.Background()
	since := time.Date(2026, 11, 30, 12, 0, 0, 5, time.FixedZone("x", 3600))
	c.Version(ctx)
	c.IntegrityCheck(ctx)
	c.CreateTask(ctx, api.CreateTaskInput{Title: "t", Start: true, BlockedBy: []string{"a"}})
	c.ListTasks(ctx, api.ListTasksInput{})
	c.ListTasks(ctx, api.ListTasksInput{All: true, Root: "a b/c"})
	c.GetTask(ctx, "a/b c")
	c.GetTaskJSON(ctx, "k1")
	c.EditTask(ctx, "k1", api.EditTaskInput{})
	c.ArchiveTask(ctx, "k1", api.ArchiveTaskInput{})
	c.SetTaskStatus(ctx, "k1", core.StatusDone)
	c.ListProfiles(ctx)
	c.GetProfile(ctx, "p q")
	c.AddProfile(ctx, core.Profile{Name: "p", Command: "x"})
	c.RemoveProfile(ctx, "p", api.RemoveProfileInput{})
	c.StartTask(ctx, "k1", api.StartTaskInput{})
	c.StartTask(ctx, "k1", api.StartTaskInput{Prompt: "go"})
	c.MessageTask(ctx, "k1", api.MessageInput{Text: "hi", Delivery: api.DeliveryInterrupt})
	c.StopTask(ctx, "k1", api.StopTaskInput{})
	c.AnswerQuestion(ctx, "k1", api.AnswerInput{Option: 1})
	c.Conversation(ctx, "k1", api.ConversationInput{})
	c.Conversation(ctx, "k1", api.ConversationInput{After: 3, Before: -1, Limit: 50})
	c.HandoffTask(ctx, "k1", api.HandoffInput{To: "back"})
	c.BlockTask(ctx, "k1", api.BlockInput{On: []string{"x"}})
	c.TaskQueue(ctx, "k1")
	c.DropQueued(ctx, "k1", api.DropQueueInput{All: true})
	c.TaskDiff(ctx, "k1", api.DiffInput{})
	c.TaskDiff(ctx, "k1", api.DiffInput{Patch: true})
	c.TaskReview(ctx, "k1")
	c.PushTask(ctx, "k1", api.PushInput{})
	c.PullRequestTask(ctx, "k1", api.PullRequestInput{Draft: true})
	c.MergeTask(ctx, "k1", api.MergeInput{Squash: true})
	c.DiscardTask(ctx, "k1", api.DiscardTaskInput{})
	c.PruneWorktrees(ctx, api.PruneInput{DryRun: true})
	c.ListRoles(ctx)
	c.GetRole(ctx, "r")
	c.AddRole(ctx, api.RoleInput{Name: "r"})
	c.EditRole(ctx, "r", api.RoleInput{Profile: "p"})
	c.RemoveRole(ctx, "r", api.RemoveRoleInput{})
	c.ListPersons(ctx)
	c.AddPerson(ctx, api.AddPersonInput{Name: "ann"})
	c.ListHosts(ctx)
	c.GetHost(ctx, "h")
	c.AddHost(ctx, api.HostInput{Name: "h"})
	c.RemoveHost(ctx, "h")
	c.CheckHost(ctx, "h")
	c.SetBudget(ctx, "k1", api.BudgetInput{Set: "5USD"})
	c.Usage(ctx, api.UsageInput{})
	c.Usage(ctx, api.UsageInput{By: "day", Since: since})
	c.ToolSurface(ctx)
	c.CallTool(ctx, "x", nil)
	c.StopTask(ctx, "", api.StopTaskInput{})
	c.GetRole(ctx, "")
	// After the table: the operations it brought, pinned likewise.
	c.TaskStats(ctx, api.ListTasksInput{All: true})
	two := 2
	c.EditHost(ctx, "h", api.HostEdit{MaxAgents: &two})
	c.FollowAppends(ctx, "s1", "k1")
	c.FollowAppends(ctx, "s1", "")
	c.Events(ctx, api.EventsInput{TaskID: "k1", Appends: api.AppendsNone})
	mu.Lock()
	got := out.String()
	mu.Unlock()
	want, err := os.ReadFile(filepath.Join("testdata", "requests.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("the requests changed:\n got:\n%s\nwant:\n%s", got, want)
	}
}
