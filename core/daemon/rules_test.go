package daemon_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

type waitJSON struct {
	Outcome  string    `json:"outcome"`
	Reason   string    `json:"reason"`
	ExitCode int       `json:"exit_code"`
	Task     core.Task `json:"task"`
}

func waitFor(t *testing.T, d *daemontest.Daemon, id string) (waitJSON, int) {
	t.Helper()
	r := d.Run("wait", id, "--json", "--timeout", "60s")
	var w waitJSON
	if err := json.Unmarshal([]byte(r.Stdout), &w); err != nil {
		t.Fatalf("wait %s: exit %d, stdout %q stderr %q: %v", id, r.Code, r.Stdout, r.Stderr, err)
	}
	return w, r.Code
}

// countNotes counts the engine's status notes on a task containing sub.
func countNotes(t *testing.T, d *daemontest.Daemon, id, sub string) int {
	t.Helper()
	n := 0
	for _, m := range conversation(t, d, id) {
		if m.Kind == core.MsgStatus && strings.Contains(m.Text, sub) {
			n++
		}
	}
	return n
}

// Rule 4 for every failure: an agent that exits at once, does not answer
// initialize in time, prints non-ACP output at start or mid-turn, or whose
// command cannot be executed, fails its run, and the failed run climbs to
// a person like a crash: role eng reports to alice, alice ends up holding
// the task, reason Stalled, the run's error as detail, and kandev wait
// says escalated. The agent is not relaunched in a loop.
func TestFailedRunsEscalate(t *testing.T) {
	noexec := filepath.Join(t.TempDir(), "agent-without-x-bit")
	if err := os.WriteFile(noexec, []byte("#!/bin/sh\nexit 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		env    []string // daemon environment
		prof   func(bin string) core.Profile
		prompt string
		detail string // in the stall record
	}{
		{name: "exit-at-start", detail: "exit status 2",
			prof: func(bin string) core.Profile {
				return core.Profile{Command: bin, Args: []string{"mock-agent"}, Env: []string{"KANDEV_MOCK_EXIT_AT_START=1"}, MCP: true}
			}},
		{name: "garbage-at-start", detail: "not ACP",
			prof: func(bin string) core.Profile {
				return core.Profile{Command: bin, Args: []string{"mock-agent"}, Env: []string{"KANDEV_MOCK_GARBAGE_AT_START=1"}, MCP: true}
			}},
		{name: "start-timeout", detail: "did not answer in time", env: []string{"KANDEV_AGENT_START_TIMEOUT=1s"},
			prof: func(bin string) core.Profile {
				return core.Profile{Command: bin, Args: []string{"mock-agent"}, Env: []string{"KANDEV_MOCK_INIT_DELAY=10m"}, MCP: true}
			}},
		{name: "not-executable", detail: "permission denied",
			prof: func(string) core.Profile { return core.Profile{Command: noexec, MCP: true} }},
		{name: "garbage-mid-turn", detail: "not ACP", prompt: "mock: say about to break\nmock: garbage\nmock: hang",
			prof: func(bin string) core.Profile {
				return core.Profile{Command: bin, Args: []string{"mock-agent"}, MCP: true}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := daemontest.Start(t, daemontest.WithEnv(c.env...))
			ctx := context.Background()
			if _, err := d.Client.AddPerson(ctx, api.AddPersonInput{Name: "alice"}); err != nil {
				t.Fatal(err)
			}
			p := c.prof(d.Bin)
			p.Name = "agent"
			if _, err := d.Client.AddProfile(ctx, p); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Client.AddRole(ctx, api.RoleInput{Name: "eng", Profile: "agent", ReportsTo: "alice"}); err != nil {
				t.Fatal(err)
			}
			prompt := c.prompt
			if prompt == "" {
				prompt = "mock: say this never runs"
			}
			task := create(t, d, api.CreateTaskInput{Title: c.name, Assignee: "eng", Start: true, Prompt: prompt})
			got := waitAssignee(t, d, task.ID, "person", "alice")
			if got.Stalled == nil || got.Stalled.Reason != "Stalled" || !got.Stalled.From.IsRoleNamed("eng") ||
				!strings.Contains(got.Stalled.Detail, "run failed") || !strings.Contains(got.Stalled.Detail, c.detail) || !got.Stalled.Failed {
				dump(t, d, task.ID)
				t.Fatalf("stall record %+v, want Stalled from role:eng with %q", got.Stalled, c.detail)
			}
			if got.Waiting != "" {
				t.Fatalf("a failed run is not an unserved profile: waiting %q", got.Waiting)
			}
			w, code := waitFor(t, d, task.ID)
			if code != 12 || w.Outcome != "escalated" || w.ExitCode != 12 || !strings.Contains(w.Reason, "person alice") {
				t.Fatalf("wait: exit %d %+v", code, w)
			}
			// Held by alice: the failing agent ran once, and a start
			// failure left its prompt queued for whoever takes the task.
			if n := countNotes(t, d, task.ID, "session failed: ") + countNotes(t, d, task.ID, "agent failed to start"); n != 1 {
				dump(t, d, task.ID)
				t.Fatalf("%d failure notes, want exactly one run", n)
			}
			if c.prompt == "" && got.Queued != 1 {
				t.Fatalf("the undelivered prompt: queued %d", got.Queued)
			}
		})
	}
}

func showJSON(t *testing.T, d *daemontest.Daemon, id string) core.Task {
	t.Helper()
	var task core.Task
	out := d.MustRun("task", "show", id, "--json")
	if err := json.Unmarshal([]byte(out), &task); err != nil {
		t.Fatalf("task show %s --json: %v\n%s", id, err, out)
	}
	return task
}

// A turn's end changes no status: a child waiting on its parent's answer,
// and a task waiting on its subtask, stay in_progress.
func TestQuestionKeepsStatus(t *testing.T) {
	d := daemontest.Start(t)
	parent := create(t, d, api.CreateTaskInput{Title: "parent"})
	child := create(t, d, api.CreateTaskInput{Title: "child", ParentID: parent.ID, Autopilot: true, Start: true,
		Prompt: askParent("Which colour?") + "\nmock: say asked"})
	q := waitQuestion(t, d, child.ID)
	waitIdle(t, d, child.ID)
	got := showJSON(t, d, child.ID)
	if got.Status != core.StatusInProgress || got.PendingQuestion == nil || got.PendingQuestion.ID != q.ID || got.Stalled != nil {
		t.Fatalf("a child waiting on its parent: status %s question %+v stalled %+v", got.Status, got.PendingQuestion, got.Stalled)
	}
	// A task waiting on its subtask.
	waiter := create(t, d, api.CreateTaskInput{Title: "waiter"})
	create(t, d, api.CreateTaskInput{Title: "sub", ParentID: waiter.ID})
	if _, err := d.Client.StartTask(context.Background(), waiter.ID, api.StartTaskInput{Prompt: "mock: say waiting on my subtask"}); err != nil {
		t.Fatal(err)
	}
	waitSaid(t, d, waiter.ID, "waiting on my subtask")
	waitIdle(t, d, waiter.ID)
	if got := showJSON(t, d, waiter.ID); got.Status != core.StatusInProgress || got.Stalled != nil || got.Assignee.Kind != "role" {
		t.Fatalf("a task waiting on its subtask: status %s stalled %+v assignee %+v", got.Status, got.Stalled, got.Assignee)
	}
}

// Only the holder hands a task on: a second handoff in the same turn, after
// the first gave the task to a person, is refused (CONFLICT naming the
// holder) and changes nothing; so is a status change of the task. The
// agent does not run again.
func TestOnlyHolderHandsOn(t *testing.T) {
	d := daemontest.Start(t)
	ctx := context.Background()
	if _, err := d.Client.AddPerson(ctx, api.AddPersonInput{Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Client.AddRole(ctx, api.RoleInput{Name: "eng", Profile: "mock", ReportsTo: "alice"}); err != nil {
		t.Fatal(err)
	}
	task := create(t, d, api.CreateTaskInput{Title: "twice", Assignee: "eng", Start: true, Prompt: strings.Join([]string{
		call("handoff_task_kandev", map[string]any{"to": "alice", "message": "please review"}),
		call("handoff_task_kandev", map[string]any{"to": "back", "message": "mock: say pulled back"}),
		call("set_task_status_kandev", map[string]any{"task_id": "${task_id}", "status": "in_progress"}),
		"mock: say end of turn",
	}, "\n")})
	waitSaid(t, d, task.ID, "end of turn")
	got := waitSettled(t, d, task.ID)
	var refusals []string
	for _, s := range said(t, d, task.ID) {
		if strings.HasPrefix(s, "error ") {
			refusals = append(refusals, s)
		}
	}
	if len(refusals) != 2 || !strings.Contains(refusals[0], "error handoff_task_kandev: CONFLICT") ||
		!strings.Contains(refusals[0], "person alice holds it") || !strings.Contains(refusals[1], "error set_task_status_kandev: CONFLICT") {
		t.Fatalf("refusals %q", refusals)
	}
	if got.Assignee == nil || got.Assignee.Kind != "person" || got.Assignee.Name != "alice" || got.Status != core.StatusReview || got.Stalled != nil {
		t.Fatalf("task: assignee %+v status %s stalled %+v", got.Assignee, got.Status, got.Stalled)
	}
	handoffs := 0
	for _, m := range conversation(t, d, task.ID) {
		if m.Kind == core.MsgHandoff {
			handoffs++
		}
	}
	if n := len(prompts(conversation(t, d, task.ID))); n != 1 || handoffs != 1 || saidContains(t, d, task.ID, "pulled back") {
		dump(t, d, task.ID)
		t.Fatalf("%d prompts, %d handoffs: the refused handoff had effects", n, handoffs)
	}
	if w, code := waitFor(t, d, task.ID); code != 10 || w.Outcome != "person" {
		t.Fatalf("wait: %d %+v", code, w)
	}
}

// No pointless turns: a parent that signs its child off itself is not then
// woken with "your subtask finished". The sign-off prompt tells it how many
// subtasks are open, so it hands its own task on in that turn.
func TestSignOffBringsNoWake(t *testing.T) {
	d := daemontest.Start(t)
	on := func(kind, directive string) string {
		return "mock: on " + kind + ": " + strings.TrimPrefix(directive, "mock: ")
	}
	parent := create(t, d, api.CreateTaskInput{Title: "parent", Start: true, Prompt: strings.Join([]string{
		on("handoff", call("set_task_status_kandev", map[string]any{"task_id": "${child_task_id}", "status": "done"})),
		on("handoff", "mock: if open_subtasks=1: "+strings.TrimPrefix(call("handoff_task_kandev", map[string]any{"to": "back", "message": "all signed off"}), "mock: ")),
		call("create_task_kandev", map[string]any{"title": "child", "prompt": call("handoff_task_kandev", map[string]any{"to": "back", "message": "child done"})}),
	}, "\n")})
	waitAssignee(t, d, parent.ID, "person", core.Operator)
	got := waitSettled(t, d, parent.ID)
	if got.Stalled != nil || got.Status != core.StatusReview {
		dump(t, d, parent.ID)
		t.Fatalf("parent: stalled %+v status %s, want handed back for review", got.Stalled, got.Status)
	}
	ps := prompts(conversation(t, d, parent.ID))
	var rendered []string
	for _, m := range conversation(t, d, parent.ID) {
		if m.Kind == core.MsgPrompt {
			rendered = append(rendered, metaField(m, "rendered"))
		}
	}
	if len(ps) != 2 || !strings.Contains(rendered[1], "[kandev:handoff]") || !strings.Contains(rendered[1], "open_subtasks: 1") {
		dump(t, d, parent.ID)
		t.Fatalf("parent turns: %q, want the kickoff and the sign-off only", rendered)
	}
	for _, r := range rendered {
		if strings.Contains(r, "[kandev:wake]") {
			t.Fatalf("a wake for a sign-off the parent did itself: %q", r)
		}
	}
}

// A parent whose turn ends with its child's question unanswered is not held
// by that child (the child waits on it: a deadlock nobody is told of). It
// stalls with the question as the detail, and kandev wait ROOT returns.
func TestUnansweredChildQuestionStallsParent(t *testing.T) {
	d := daemontest.Start(t)
	root := create(t, d, api.CreateTaskInput{Title: "root", Start: true, Prompt: strings.Join([]string{
		call("create_task_kandev", map[string]any{"title": "child", "autopilot": true, "prompt": askParent("Which database, sqlite or postgres?")}),
		"mock: say delegated",
	}, "\n")})
	w, code := waitFor(t, d, root.ID)
	if code != 12 || w.Outcome != "escalated" {
		t.Fatalf("wait root: exit %d %+v", code, w)
	}
	got := get(t, d, root.ID)
	if got.Stalled == nil || got.Stalled.Reason != "Stalled" || !strings.Contains(got.Stalled.Detail, "unanswered question") ||
		!strings.Contains(got.Stalled.Detail, "Which database, sqlite or postgres?") || got.Assignee.Kind != "person" || got.Stalled.Failed {
		dump(t, d, root.ID)
		t.Fatalf("root: stalled %+v assignee %+v", got.Stalled, got.Assignee)
	}
	// The child still waits on its question, in progress.
	ts, err := d.Client.ListTasks(context.Background(), api.ListTasksInput{Root: root.ID})
	if err != nil || len(ts) != 2 {
		t.Fatalf("tree: %v %v", ts, err)
	}
	if c := ts[1]; c.PendingQuestion == nil || c.PendingQuestion.Status != core.QuestionPending || c.Status != core.StatusInProgress {
		t.Fatalf("child: question %+v status %s", c.PendingQuestion, c.Status)
	}
	if !strings.Contains(got.Stalled.Detail, ts[1].PendingQuestion.ID) {
		t.Fatalf("the detail does not name question %s: %q", ts[1].PendingQuestion.ID, got.Stalled.Detail)
	}
}

// A stalled task with nobody to escalate to (no manager, no hander, its
// creating task archived) stays with its role, but not silently: it is
// marked stuck in task show, task list (text and --json) and your_turn,
// kandev wait exits 15, and the operator's message clears the mark and
// runs the turn.
func TestStuckWithNobodyToEscalateTo(t *testing.T) {
	d := daemontest.Start(t)
	ctx := context.Background()
	parent := create(t, d, api.CreateTaskInput{Title: "parent", Start: true,
		Prompt: call("create_task_kandev", map[string]any{"title": "orphan", "start": false})})
	var child core.Task
	daemontest.Eventually(t, wait, "the child", func() bool {
		ts, _ := d.Client.ListTasks(ctx, api.ListTasksInput{Root: parent.ID})
		if len(ts) == 2 {
			child = ts[1]
			return true
		}
		return false
	})
	if _, err := d.Client.ArchiveTask(ctx, parent.ID, api.ArchiveTaskInput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Client.StartTask(ctx, child.ID, api.StartTaskInput{Prompt: "mock: say my last words before getting stuck"}); err != nil {
		t.Fatal(err)
	}
	w, code := waitFor(t, d, child.ID)
	if code != 15 || w.Outcome != "stuck" || w.ExitCode != 15 || !strings.Contains(w.Reason, "nobody to escalate to") {
		dump(t, d, child.ID)
		t.Fatalf("wait: exit %d %+v", code, w)
	}
	got := showJSON(t, d, child.ID)
	if got.Stalled == nil || got.Stalled.Reason != core.StallStuck || !got.Stalled.From.IsRoleNamed("mock") ||
		!strings.Contains(got.Stalled.Detail, "my last words") || got.Stalled.Failed || !got.YourTurn || got.Assignee.Kind != "role" || got.Assignee.Name != "mock" {
		t.Fatalf("stuck task: stalled %+v your_turn %v assignee %+v", got.Stalled, got.YourTurn, got.Assignee)
	}
	if out := d.MustRun("task", "show", child.ID); !strings.Contains(out, "stuck") || !strings.Contains(out, "nobody to escalate to") {
		t.Fatalf("task show:\n%s", out)
	}
	if out := d.MustRun("task", "list"); !strings.Contains(out, "stuck") {
		t.Fatalf("task list:\n%s", out)
	}
	var list []core.Task
	if err := json.Unmarshal([]byte(d.MustRun("task", "list", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range list {
		if l.ID == child.ID {
			found = l.Stuck() && l.YourTurn
		}
	}
	if !found {
		t.Fatalf("task list --json does not mark %s stuck", child.ID)
	}
	if !strings.Contains(d.Log(), "marked stuck") {
		t.Fatalf("the daemon did not log it:\n%s", d.Log())
	}
	// The operator's message clears the mark; the turn runs.
	message(t, d, child.ID, "mock: say back at it")
	waitSaid(t, d, child.ID, "back at it")
}

// A failed start writes its stall check with the failure: a daemon that
// dies before the check runs it at startup, and the task reaches alice.
func TestFailedStartCheckSurvivesKill(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_FAILPOINT=exit-after-turn-end"))
	ctx := context.Background()
	if _, err := d.Client.AddPerson(ctx, api.AddPersonInput{Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Client.AddProfile(ctx, core.Profile{Name: "dies", Command: d.Bin, Args: []string{"mock-agent"},
		Env: []string{"KANDEV_MOCK_EXIT_AT_START=1"}, MCP: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Client.AddRole(ctx, api.RoleInput{Name: "eng", Profile: "dies", ReportsTo: "alice"}); err != nil {
		t.Fatal(err)
	}
	task := create(t, d, api.CreateTaskInput{Title: "dies at start", Assignee: "eng", Start: true, Prompt: "mock: say never"})
	select {
	case <-d.Exited():
	case <-time.After(wait):
		t.Fatal("the failpoint did not stop the daemon")
	}
	d.SetEnv("KANDEV_FAILPOINT", "")
	d.Restart()
	got := waitAssignee(t, d, task.ID, "person", "alice")
	if got.Stalled == nil || !strings.Contains(got.Stalled.Detail, "exit status 2") {
		t.Fatalf("stall record %+v", got.Stalled)
	}
	if !strings.Contains(d.Log(), "startup sweep") {
		t.Fatalf("daemon log:\n%s", d.Log())
	}
}
