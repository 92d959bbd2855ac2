package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

func waitAssignee(t *testing.T, d *daemontest.Daemon, id, kind, name string) core.Task {
	t.Helper()
	var task core.Task
	deadline := time.Now().Add(wait)
	for {
		task = get(t, d, id)
		if task.Assignee != nil && string(task.Assignee.Kind) == kind && task.Assignee.Name == name {
			return task
		}
		if time.Now().After(deadline) {
			dump(t, d, id)
			t.Fatalf("timed out waiting for task %s to go to %s %s; it is with %+v", id, kind, name, task.Assignee)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitEscalation waits for the handoff entry recording an escalation from
// one assignee to another and returns its text. (The chain may move on
// before a poll sees the intermediate assignee, so the record is checked.)
func waitEscalation(t *testing.T, d *daemontest.Daemon, id, from, to string) string {
	t.Helper()
	want := "escalated from " + from + " to " + to
	deadline := time.Now().Add(wait)
	for {
		for _, m := range conversation(t, d, id) {
			if m.Kind == core.MsgHandoff && strings.Contains(m.Text, want) {
				return m.Text
			}
		}
		if time.Now().After(deadline) {
			dump(t, d, id)
			t.Fatalf("timed out waiting for task %s: %s", id, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// dump logs a task's conversation and the daemon's log, for failures.
func dump(t *testing.T, d *daemontest.Daemon, id string) {
	t.Helper()
	for _, m := range conversation(t, d, id) {
		t.Logf("  #%d %s %s: %s", m.Seq, m.Kind, m.Author, m.Text)
	}
	t.Logf("daemon log:\n%s", d.Log())
}

func setupChain(t *testing.T, d *daemontest.Daemon) {
	t.Helper()
	ctx := context.Background()
	if _, err := d.Client.AddPerson(ctx, api.AddPersonInput{Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Client.AddRole(ctx, api.RoleInput{Name: "lead", Profile: "mock", ReportsTo: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Client.AddRole(ctx, api.RoleInput{Name: "engineer", Profile: "mock", ReportsTo: "lead"}); err != nil {
		t.Fatal(err)
	}
}

func sessionsOf(t *testing.T, d *daemontest.Daemon, taskID string) map[string][]string {
	t.Helper()
	// role → agent session ids seen in its status notes, in order.
	out := map[string][]string{}
	for _, m := range conversation(t, d, taskID) {
		if m.Kind == core.MsgStatus && strings.HasPrefix(m.Text, "role ") {
			role := strings.Fields(m.Text)[1]
			out[role] = append(out[role], metaField(m, "agent_session_id"))
		}
	}
	return out
}

// engineer → lead → person: the engineer's turn ends with no handoff, the
// lead's agent gets the task with "Stalled" and the engineer's last words,
// hands it back with guidance, the engineer continues its own session; the
// lead stalls and the person gets it.
func TestEscalationChain(t *testing.T) {
	d := daemontest.Start(t)
	setupChain(t, d)
	// The engineer's last words carry a script for the lead's mock agent.
	leadScript := call("handoff_task_kandev", map[string]any{"to": "back", "message": "mock: history"})
	task := create(t, d, api.CreateTaskInput{Title: "parser", Assignee: "engineer", Start: true,
		Prompt: "mock: say I could not finish the parser\nmock: say " + leadScript})
	if task.Surface != "office-task" {
		t.Fatalf("a task for a named role gets the office surface, got %s", task.Surface)
	}
	// The lead gets it, hands it back; the engineer continues.
	waitSaid(t, d, task.ID, "history:")
	var leadPrompt string
	for _, m := range conversation(t, d, task.ID) {
		if m.Kind == core.MsgPrompt && strings.Contains(metaField(m, "rendered"), "[kandev:stalled]") {
			leadPrompt = metaField(m, "rendered")
			break
		}
	}
	if !strings.Contains(leadPrompt, "stalled") || !strings.Contains(leadPrompt, "I could not finish the parser") {
		t.Fatalf("the lead's prompt lacks the stall report: %q", leadPrompt)
	}
	if !saidContains(t, d, task.ID, "turn 2") {
		t.Fatalf("the engineer did not continue its earlier session: %q", said(t, d, task.ID))
	}
	// The engineer stalls again, the lead (resumed) stalls too: alice.
	got := waitAssignee(t, d, task.ID, "person", "alice")
	if got.Stalled == nil || got.Stalled.Reason != "Stalled" || !got.Stalled.From.IsRoleNamed("lead") || got.Stalled.Failed || got.Status != core.StatusTodo {
		t.Fatalf("alice's task: stalled %+v status %s", got.Stalled, got.Status)
	}
	sess := sessionsOf(t, d, task.ID)
	if len(sess["engineer"]) != 2 || sess["engineer"][0] != sess["engineer"][1] {
		t.Fatalf("engineer runs should share one agent session: %v", sess["engineer"])
	}
	if len(sess["lead"]) != 2 || sess["lead"][0] != sess["lead"][1] {
		t.Fatalf("lead runs should share one agent session: %v", sess["lead"])
	}
	// kandev wait: escalated.
	r := d.Run("wait", task.ID, "--json")
	if r.Code != 12 || !strings.Contains(r.Stdout, `"outcome":"escalated"`) {
		t.Fatalf("wait: exit %d %s", r.Code, r.Stdout)
	}
}

// A run that crashes escalates with the error.
func TestCrashEscalatesWithError(t *testing.T) {
	d := daemontest.Start(t)
	setupChain(t, d)
	task := create(t, d, api.CreateTaskInput{Title: "crashy", Assignee: "engineer", Start: true, Prompt: "mock: crash"})
	text := waitEscalation(t, d, task.ID, "role:engineer", "role:lead")
	if !strings.Contains(text, "run failed") || !strings.Contains(text, "exit status 3") {
		t.Fatalf("escalation record %q", text)
	}
	// The lead's mock has nothing to say to a crash: it stalls too, so the
	// chain ends with the person.
	got := waitAssignee(t, d, task.ID, "person", "alice")
	if got.Stalled == nil || !got.Stalled.From.IsRoleNamed("lead") {
		t.Fatalf("stall record %+v", got.Stalled)
	}
}

// A profile whose command is missing does not escalate; once fixed, the
// task starts by itself.
func TestUnservedRunWaitsThenStarts(t *testing.T) {
	d := daemontest.Start(t)
	ctx := context.Background()
	if _, err := d.Client.AddProfile(ctx, core.Profile{Name: "later", Command: "kandev-not-installed-yet", MCP: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Client.AddPerson(ctx, api.AddPersonInput{Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Client.AddRole(ctx, api.RoleInput{Name: "worker", Profile: "later", ReportsTo: "alice"}); err != nil {
		t.Fatal(err)
	}
	task := create(t, d, api.CreateTaskInput{Title: "waits", Assignee: "worker", Start: true, Prompt: "mock: say finally running"})
	daemontest.Eventually(t, wait, "the waiting reason", func() bool { return get(t, d, task.ID).Waiting != "" })
	got := get(t, d, task.ID)
	if !strings.Contains(got.Waiting, "kandev-not-installed-yet not found") || got.WaitCause != core.WaitCannotStart ||
		got.Stalled != nil || got.Assignee.Name != "worker" {
		t.Fatalf("waiting %q (cause %q) stalled %+v assignee %+v", got.Waiting, got.WaitCause, got.Stalled, got.Assignee)
	}
	// Install the "CLI": point the profile at the real binary.
	if _, err := d.Client.AddProfile(ctx, core.Profile{Name: "later", Command: d.Bin, Args: []string{"mock-agent"}, MCP: true}); err != nil {
		t.Fatal(err)
	}
	waitSaid(t, d, task.ID, "finally running")
	if got := get(t, d, task.ID); got.Waiting != "" {
		t.Fatalf("waiting reason not cleared: %q", got.Waiting)
	}
}

// A run that waits for its CLI starts on the daemon's next start once the
// CLI is there, with nothing else said (the start's sweep kicks it).
func TestUnservedRunStartsAfterRestart(t *testing.T) {
	d := daemontest.Start(t)
	ctx := context.Background()
	cli := filepath.Join(d.Home.Dir, "later-agent")
	if _, err := d.Client.AddProfile(ctx, core.Profile{Name: "later", Command: cli, MCP: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Client.AddRole(ctx, api.RoleInput{Name: "worker", Profile: "later"}); err != nil {
		t.Fatal(err)
	}
	// A message, not a start: a start's queue item is kicked on restart
	// for its own reason.
	task := create(t, d, api.CreateTaskInput{Title: "waits", Assignee: "worker"})
	d.MustRun("task", "message", task.ID, "mock: say running after the restart")
	daemontest.Eventually(t, wait, "the waiting reason", func() bool { return get(t, d, task.ID).Waiting != "" })
	d.Stop()
	// Install the "CLI" while no daemon runs.
	script := "#!/bin/sh\nexec " + d.Bin + " mock-agent \"$@\"\n"
	if err := os.WriteFile(cli, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	d.Restart()
	waitSaid(t, d, task.ID, "running after the restart")
}

// A parent waiting on three subtasks gets one wake turn per finished one.
func TestThreeSubtasksThreeWakes(t *testing.T) {
	d := daemontest.Start(t)
	ctx := context.Background()
	parent := create(t, d, api.CreateTaskInput{Title: "parent"})
	var kids []core.Task
	for _, n := range []string{"a", "b", "c"} {
		kids = append(kids, create(t, d, api.CreateTaskInput{Title: "sub " + n, ParentID: parent.ID}))
	}
	if _, err := d.Client.StartTask(ctx, parent.ID, api.StartTaskInput{Prompt: "mock: say waiting on my subtasks"}); err != nil {
		t.Fatal(err)
	}
	got := waitIdle(t, d, parent.ID)
	if got.Stalled != nil || got.Assignee.Kind != "role" {
		t.Fatalf("a parent waiting on subtasks is held, not stalled: %+v", got.Stalled)
	}
	for _, k := range kids {
		if _, err := d.Client.SetTaskStatus(ctx, k.ID, core.StatusDone); err != nil {
			t.Fatal(err)
		}
	}
	wakeTurns := func() int {
		n := 0
		for _, m := range conversation(t, d, parent.ID) {
			if m.Kind == core.MsgPrompt && strings.Contains(metaField(m, "rendered"), "[kandev:wake]") {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(wait)
	for wakeTurns() != 3 {
		if time.Now().After(deadline) {
			// Say what the parent got, so a rare failure can be read.
			var b strings.Builder
			for _, m := range conversation(t, d, parent.ID) {
				fmt.Fprintf(&b, "%d %s %s %.120q %.200s\n", m.Seq, m.Kind, m.Author, m.Text, m.Meta)
			}
			q, _ := d.Client.TaskQueue(ctx, parent.ID)
			t.Fatalf("timed out waiting for three wake turns (%d); parent %+v\nqueue %+v\nconversation:\n%s\ndaemon log:\n%s",
				wakeTurns(), get(t, d, parent.ID), q, b.String(), d.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Each wake was its own turn, naming its subtask.
	var wakes []string
	turns := 0
	for _, m := range conversation(t, d, parent.ID) {
		if m.Kind == core.MsgPrompt {
			turns++
			if r := metaField(m, "rendered"); strings.Contains(r, "[kandev:wake]") {
				wakes = append(wakes, r)
			}
		}
	}
	for i, k := range kids {
		if !strings.Contains(wakes[i], k.ID) {
			t.Fatalf("wake %d does not name %s: %q", i, k.ID, wakes[i])
		}
	}
	if turns != 4 {
		t.Fatalf("%d turns, want 1 + 3 wakes", turns)
	}
}

// The startup sweep escalates a task whose turn ended just before the
// daemon died, before its stall check ran.
func TestStartupSweepAfterKill9(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_FAILPOINT=exit-after-turn-end"))
	setupChain(t, d)
	task := create(t, d, api.CreateTaskInput{Title: "sweep", Assignee: "engineer", Start: true, Prompt: "mock: say my last words"})
	select {
	case <-d.Exited():
	case <-time.After(wait):
		t.Fatal("the failpoint did not stop the daemon")
	}
	d.SetEnv("KANDEV_FAILPOINT", "")
	d.Restart()
	if text := waitEscalation(t, d, task.ID, "role:engineer", "role:lead"); !strings.Contains(text, "my last words") {
		t.Fatalf("escalation record %q", text)
	}
	if !strings.Contains(d.Log(), "startup sweep") {
		t.Fatalf("daemon log:\n%s", d.Log())
	}
}

// No role marks its own task done; cycles in the chain are refused.
func TestSignOffGuardAndCycles(t *testing.T) {
	d := daemontest.Start(t)
	ctx := context.Background()
	task := create(t, d, api.CreateTaskInput{Title: "self-approve", Start: true,
		Prompt: call("set_task_status_kandev", map[string]any{"task_id": "${task_id}", "status": "done"})})
	waitSaid(t, d, task.ID, "error set_task_status_kandev: FORBIDDEN")
	if get(t, d, task.ID).Status == core.StatusDone {
		t.Fatal("a role marked its own task done")
	}
	if _, err := d.Client.AddRole(ctx, api.RoleInput{Name: "a", Profile: "mock"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Client.AddRole(ctx, api.RoleInput{Name: "b", Profile: "mock", ReportsTo: "a"}); err != nil {
		t.Fatal(err)
	}
	_, err := d.Client.EditRole(ctx, "a", api.RoleInput{ReportsTo: "b"})
	if core.CodeOf(err) != core.CodeValidation || !strings.Contains(err.Error(), "cycle") {
		t.Fatalf("cycle: %v", err)
	}
	r := d.Run("role", "edit", "a", "--reports-to", "a")
	if r.Code != 1 || !strings.Contains(r.Stderr, "itself") {
		t.Fatalf("self report: %d %q", r.Code, r.Stderr)
	}
}

// kandev wait exits with each outcome's code.
func TestWaitOutcomes(t *testing.T) {
	d := daemontest.Start(t)
	ctx := context.Background()
	type out struct {
		Outcome  string `json:"outcome"`
		ExitCode int    `json:"exit_code"`
	}
	check := func(id, outcome string, code int) {
		t.Helper()
		r := d.Run("wait", id, "--json", "--timeout", "30s")
		var o out
		_ = json.Unmarshal([]byte(r.Stdout), &o)
		if r.Code != code || o.Outcome != outcome || o.ExitCode != code {
			t.Fatalf("wait %s: exit %d outcome %q, want %d %q (stderr %q)", id, r.Code, o.Outcome, code, outcome, r.Stderr)
		}
	}
	// Handed to a person (the agent handed it back properly).
	person := create(t, d, api.CreateTaskInput{Title: "hands back", Start: true,
		Prompt: call("handoff_task_kandev", map[string]any{"to": "back", "message": "done, please review"})})
	check(person.ID, "person", 10)
	// Done.
	if _, err := d.Client.SetTaskStatus(ctx, person.ID, core.StatusDone); err != nil {
		t.Fatal(err)
	}
	check(person.ID, "done", 0)
	// A question for you.
	q := create(t, d, api.CreateTaskInput{Title: "asks", Start: true, Prompt: call("ask_user_question_kandev",
		map[string]any{"questions": []map[string]any{{"prompt": "ok?"}}})})
	check(q.ID, "question", 11)
	// Back to you: the turn ended without a handoff, and the task went back
	// to the person who created it (ADR 0025); that is a person's turn.
	back := create(t, d, api.CreateTaskInput{Title: "stalls", Start: true, Prompt: "mock: say nothing handed"})
	check(back.ID, "person", 10)
	// Escalated: past its role, to the role's manager.
	if _, err := d.Client.AddPerson(ctx, api.AddPersonInput{Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Client.AddRole(ctx, api.RoleInput{Name: "eng", Profile: "mock", ReportsTo: "alice"}); err != nil {
		t.Fatal(err)
	}
	esc := create(t, d, api.CreateTaskInput{Title: "stalls up", Assignee: "eng", Start: true, Prompt: "mock: say nothing handed"})
	check(esc.ID, "escalated", 12)
	// Failed: a failed run is a stall, so it escalates (above) unless the
	// task is held: here by an open subtask, whose finishing wakes it.
	failed := create(t, d, api.CreateTaskInput{Title: "fails"})
	create(t, d, api.CreateTaskInput{Title: "holds it", ParentID: failed.ID})
	if _, err := d.Client.StartTask(ctx, failed.ID, api.StartTaskInput{Prompt: "mock: crash"}); err != nil {
		t.Fatal(err)
	}
	daemontest.Eventually(t, wait, "the failure", func() bool {
		s := get(t, d, failed.ID).Session
		return s != nil && s.State == core.SessionFailed
	})
	check(failed.ID, "failed", 13)
	// Cancelled.
	c := create(t, d, api.CreateTaskInput{Title: "cancel me"})
	if _, err := d.Client.SetTaskStatus(ctx, c.ID, core.StatusCancelled); err != nil {
		t.Fatal(err)
	}
	check(c.ID, "cancelled", 14)
	// Timeout.
	idle := create(t, d, api.CreateTaskInput{Title: "idle", Start: true, Prompt: "mock: hang"})
	waitState(t, d, idle.ID, core.SessionRunning)
	r := d.Run("wait", idle.ID, "--timeout", "300ms")
	if r.Code != 124 {
		t.Fatalf("timeout: exit %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
}

// A person handing a task away while its agent's turn runs cancels that
// turn; the new role takes over with the message.
func TestHandoffTakesTaskFromRunningTurn(t *testing.T) {
	d := daemontest.Start(t)
	ctx := context.Background()
	if _, err := d.Client.AddRole(ctx, api.RoleInput{Name: "second", Profile: "mock"}); err != nil {
		t.Fatal(err)
	}
	task := create(t, d, api.CreateTaskInput{Title: "busy", Start: true, Prompt: "mock: say busy\nmock: hang"})
	waitSaid(t, d, task.ID, "busy")
	first := get(t, d, task.ID).Session
	res, err := d.Client.HandoffTask(ctx, task.ID, api.HandoffInput{To: "second", Message: "mock: say second here"})
	if err != nil || res.Delivered != "turn" || res.To.Name != "second" {
		t.Fatalf("handoff: %+v %v", res, err)
	}
	waitSaid(t, d, task.ID, "second here")
	got := get(t, d, task.ID)
	if got.Session.ID == first.ID || got.Session.Role != "second" {
		t.Fatalf("session %+v, want a run of role second", got.Session)
	}
	groupGone(t, first.PID)
	// The first role's run ended as handed on: its cut turn is no stall.
	for _, m := range conversation(t, d, task.ID) {
		if m.Kind == core.MsgHandoff && strings.Contains(m.Text, "escalated from role:mock") {
			t.Fatalf("a handoff is not a stall: %q", m.Text)
		}
	}
}

// A task waiting on a blocker is held, not stalled, and gets a wake turn
// when the blocker finishes.
func TestBlockerWakes(t *testing.T) {
	d := daemontest.Start(t)
	ctx := context.Background()
	blocker := create(t, d, api.CreateTaskInput{Title: "migrate the schema"})
	waiting := create(t, d, api.CreateTaskInput{Title: "ship the API", BlockedBy: []string{blocker.ID}})
	if got := get(t, d, waiting.ID); len(got.BlockedBy) != 1 || got.BlockedBy[0] != blocker.ID {
		t.Fatalf("blocked_by %v", got.BlockedBy)
	}
	if _, err := d.Client.StartTask(ctx, waiting.ID, api.StartTaskInput{Prompt: "mock: say waiting for the schema"}); err != nil {
		t.Fatal(err)
	}
	held := waitIdle(t, d, waiting.ID)
	if held.Stalled != nil || held.Assignee.Kind != "role" {
		t.Fatalf("a task waiting on a blocker is held: stalled %+v assignee %+v", held.Stalled, held.Assignee)
	}
	// A blocker cycle is refused.
	if _, err := d.Client.BlockTask(ctx, blocker.ID, api.BlockInput{On: []string{waiting.ID}}); core.CodeOf(err) != core.CodeValidation {
		t.Fatalf("cycle: %v", err)
	}
	if _, err := d.Client.SetTaskStatus(ctx, blocker.ID, core.StatusDone); err != nil {
		t.Fatal(err)
	}
	daemontest.Eventually(t, wait, "the wake turn", func() bool {
		for _, m := range conversation(t, d, waiting.ID) {
			if m.Kind == core.MsgPrompt && strings.Contains(metaField(m, "rendered"), "Your blocker "+blocker.ID) {
				return true
			}
		}
		return false
	})
	if got := get(t, d, waiting.ID); len(got.BlockedBy) != 0 {
		t.Fatalf("still blocked by %v", got.BlockedBy)
	}
}
