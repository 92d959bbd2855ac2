package cmd

import (
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
)

// status counts the urgent apart from work to review, lists the most
// urgent first, and counts finished work and a running agent that waits
// on a permission nowhere but where they belong.
func TestGlanceRanksByUrgency(t *testing.T) {
	op := core.OperatorRef()
	role := core.RoleRef("eng")
	live := &core.SessionInfo{State: core.SessionRunning}
	tasks := []core.Task{
		{ID: "r1", Status: core.StatusTodo, Assignee: &op, YourTurn: true, Stalled: &core.Stall{Reason: core.StallReturned},
			Session: &core.SessionInfo{State: core.SessionCompleted}},
		{ID: "m1", Status: core.StatusTodo, Assignee: &op, YourTurn: true, Workspace: &core.Workspace{Mode: core.WorkspaceDiscarded}},
		{ID: "d1", Status: core.StatusDone, Assignee: &op, YourTurn: true},
		{ID: "s1", Status: core.StatusInProgress, Assignee: &role, YourTurn: true, Stalled: &core.Stall{Reason: core.StallStuck}},
		{ID: "p1", Status: core.StatusInProgress, Assignee: &role, Session: live, YourTurn: true,
			PendingQuestion: &core.QuestionInfo{Kind: core.QuestionPermission, Status: core.QuestionPending}},
		{ID: "run", Status: core.StatusInProgress, Assignee: &role, Session: live},
		{ID: "r2", Status: core.StatusReview, Assignee: &op, YourTurn: true},
	}
	var g Glance
	for i := range tasks {
		g.add(&tasks[i])
	}
	g.rank()
	if got := g.line(); got != "2 waiting on you · 2 to review · 1 running" {
		t.Fatalf("line %q", got)
	}
	var ids []string
	for _, x := range g.Tasks {
		ids = append(ids, x.ID+":"+string(x.Stage)+":"+x.Why)
	}
	// The stage is the status as shown (core.StageOf): r1 came back after
	// its agent ran, r2 was handed over for review.
	want := []string{"p1:in_progress:permission", "s1:in_progress:stuck", "r1:back:back to you", "r2:review:your turn"}
	if len(ids) != len(want) {
		t.Fatalf("listed %v, want %v", ids, want)
	}
	for i := range want {
		if ids[i] != want[i] {
			t.Fatalf("listed %v, want %v", ids, want)
		}
	}
	if g.NeedYou != 4 || g.Open != 6 {
		t.Fatalf("need you %d open %d", g.NeedYou, g.Open)
	}
}

// A command asks only on a terminal, and never with --json.
func TestAskOnlyOnATerminal(t *testing.T) {
	var errOut strings.Builder
	f := &Factory{IO: IOStreams{In: strings.NewReader(" D\n"), ErrOut: &errOut, InTTY: true}}
	if a, ok := f.ask("Finish? "); !ok || a != "d" || errOut.String() != "Finish? " {
		t.Fatalf("on a terminal: %q %v, asked %q", a, ok, errOut.String())
	}
	for _, f := range []*Factory{
		{IO: IOStreams{In: strings.NewReader("y\n"), ErrOut: &errOut}},
		{IO: IOStreams{In: strings.NewReader("y\n"), ErrOut: &errOut, InTTY: true}, JSON: true},
	} {
		errOut.Reset()
		if _, ok := f.ask("Finish? "); ok || errOut.Len() != 0 {
			t.Fatalf("asked without a terminal or with --json: %q", errOut.String())
		}
	}
}

// kandev --help lists its commands in groups, daily use first and the
// plumbing (mcp, serve) last; every visible command is in a group.
func TestHelpGroupsCommands(t *testing.T) {
	root := NewCmdRoot(NewFactory())
	var out strings.Builder
	root.SetOut(&out)
	root.SetArgs([]string{"--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	help := out.String()
	at := func(s string) int {
		i := strings.Index(help, s)
		if i < 0 {
			t.Fatalf("help lacks %q:\n%s", s, help)
		}
		return i
	}
	if !(at("Daily:") < at("  status ") && at("  status ") < at("Tasks:") && at("Tasks:") < at("  task ") &&
		at("  task ") < at("Workspace:") && at("Workspace:") < at("Setup:") && at("Setup:") < at("  profile ") &&
		at("  profile ") < at("Plumbing") && at("Plumbing") < at("  mcp ") && at("Plumbing") < at("  serve ")) {
		t.Fatalf("help out of order:\n%s", help)
	}
	if strings.Contains(help, "Additional Commands") || strings.Contains(help, "mock-agent") {
		t.Fatalf("an ungrouped or hidden command shows:\n%s", help)
	}
}
