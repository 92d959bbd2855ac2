package daemon_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// child waits for the one child of a task and returns it.
func child(t *testing.T, d *daemontest.Daemon, parent string) core.Task {
	t.Helper()
	var kid core.Task
	daemontest.Eventually(t, wait, "a child of "+parent, func() bool {
		tasks, err := d.Client.ListTasks(context.Background(), api.ListTasksInput{All: true})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		for _, x := range tasks {
			if x.ParentID == parent {
				kid = x
				return true
			}
		}
		return false
	})
	return kid
}

// usageOf reads a task's usage, zero when none.
func usageOf(t *testing.T, d *daemontest.Daemon, id string) core.TaskUsage {
	t.Helper()
	if u := get(t, d, id).Usage; u != nil {
		return *u
	}
	return core.TaskUsage{}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// Usage is recorded per task and summed over its tree across turns, a
// daemon restart and a resumed session, whose cumulative cost starts from
// zero again in its new process: what it reports then is all new spend.
func TestUsageSummedPerTaskAndTree(t *testing.T) {
	d := daemontest.Start(t)
	root := create(t, d, api.CreateTaskInput{Title: "root", Start: true,
		Prompt: "mock: usage 100 20 0.01\n" + `mock: call create_task_kandev {"title":"kid","prompt":"mock: usage 50 5 0.02"}`})
	kid := child(t, d, root.ID)
	daemontest.Eventually(t, wait, "the kid's spend in the root's tree", func() bool {
		return reported(usageOf(t, d, root.ID).Tree) == 175
	})
	u := usageOf(t, d, root.ID)
	if reported(u.Own) != 120 || u.Own.Input != 100 || u.Own.Output != 20 || !near(u.Own.Cost, 0.01) || u.Own.Currency != "USD" ||
		!near(u.Tree.Cost, 0.03) || u.Turns != 1 || u.ContextUsed != 120 || u.ContextSize != 200000 {
		t.Fatalf("root usage %+v", u)
	}
	if k := usageOf(t, d, kid.ID); reported(k.Own) != 55 || reported(k.Tree) != 55 || !near(k.Own.Cost, 0.02) {
		t.Fatalf("kid usage %+v", k)
	}

	// A second turn of the same session: its cumulative cost is 0.06, of
	// which 0.05 is new.
	waitSettled(t, d, root.ID)
	message(t, d, root.ID, "mock: usage 10 10 0.05")
	daemontest.Eventually(t, wait, "the root's second turn", func() bool { return usageOf(t, d, root.ID).Turns == 2 })
	daemontest.Eventually(t, wait, "the second turn's cost", func() bool { return near(usageOf(t, d, root.ID).Own.Cost, 0.06) })
	if u := usageOf(t, d, root.ID); reported(u.Own) != 140 || reported(u.Tree) != 195 || !near(u.Tree.Cost, 0.08) {
		t.Fatalf("after two turns: %+v", u)
	}

	// Kept across a restart; the next turn resumes the agent's session in
	// a new process, which counts its cost from zero: 0.5 more, not less.
	waitSettled(t, d, root.ID)
	d.Restart()
	if u := usageOf(t, d, root.ID); reported(u.Own) != 140 || reported(u.Tree) != 195 || !near(u.Own.Cost, 0.06) || !near(u.Tree.Cost, 0.08) {
		t.Fatalf("after a restart: %+v", u)
	}
	message(t, d, root.ID, "mock: usage 1 1 0.5")
	daemontest.Eventually(t, wait, "the resumed session's turn", func() bool {
		u := usageOf(t, d, root.ID)
		return u.Turns == 3 && near(u.Own.Cost, 0.56)
	})
	if u := usageOf(t, d, root.ID); reported(u.Own) != 142 || reported(u.Tree) != 197 || !near(u.Tree.Cost, 0.58) || u.Turns != 3 {
		t.Fatalf("after the resumed turn: %+v", u)
	}
	if s := get(t, d, root.ID).Session; s == nil || s.Turns == 0 {
		t.Fatalf("root session %+v", s)
	}

	// Shown: task show, task list --wide, kandev usage.
	show := d.MustRun("task", "show", root.ID)
	// The turn that acked the kid's notice reported nothing: its tokens
	// are kandev's estimate, marked (ADR 0077).
	est := get(t, d, root.ID).Usage.Own.EstimatedTokens
	tokens := core.FormatTokens(142 + est)
	if est > 0 {
		tokens = "~" + tokens
	}
	for _, want := range []string{"tokens:", tokens + " (input 111, output 31)", "cost:", "$0.56", "subtree:", "$0.58", "context:", "2 of 200k"} {
		if !strings.Contains(show, want) {
			t.Errorf("task show lacks %q:\n%s", want, show)
		}
	}
	if wide := d.MustRun("task", "list", "--wide"); !strings.Contains(wide, "Σ$0.58 ") || !strings.Contains(wide, "$0.02 55 tok") {
		t.Errorf("task list --wide:\n%s", wide)
	}
	var rep api.UsageReport
	if err := json.Unmarshal([]byte(d.MustRun("usage", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 2 || rep.Rows[0].Key != root.ID || reported(rep.Rows[0].Spend) != 142 || rep.Rows[0].Turns != 3 ||
		reported(rep.Total) != 197 || !near(rep.Total.Cost, 0.58) || rep.Total.Currency != "USD" {
		t.Fatalf("usage report %+v", rep)
	}
	if byProfile := d.MustRun("usage", "--by", "profile"); !strings.Contains(byProfile, "mock") || !strings.Contains(byProfile, "$0.58") {
		t.Errorf("usage --by profile:\n%s", byProfile)
	}
	if status := d.MustRun("status"); !strings.Contains(status, "spent today (UTC): $0.58, "+rep.Total.TokensText()) {
		t.Errorf("status:\n%s", status)
	}
}

// countPrompts counts the prompts of a task's conversation that start so.
func countPrompts(t *testing.T, d *daemontest.Daemon, id, prefix string) int {
	t.Helper()
	n := 0
	for _, p := range prompts(conversation(t, d, id)) {
		if strings.HasPrefix(p, prefix) {
			n++
		}
	}
	return n
}

// A tree's budget: at 80% its running agents are told once; reaching it
// stops every running turn in the tree, starts none, and hands the root
// to a person with the reason Budget (kandev wait exits 17); a raise that
// leaves nothing to spend is refused; raising it past the spend hands the
// root back and the tree goes on where it stopped. A turn the budget cut
// is a stop, not a stall; the kid's turn that ends after the raise with
// no handoff is one, and climbs from the root (ADR 0046).
func TestBudgetStopsTreeAndRaisingResumes(t *testing.T) {
	d := daemontest.Start(t)
	dir := t.TempDir()
	g1, g2 := filepath.Join(dir, "g1"), filepath.Join(dir, "g2")
	// 85%, then 90% (no second notice), then 105% after g1.
	kidPrompt := `mock: usage 10 10 0.85\nmock: usage 1 1 0.05\nmock: waitfile ` + g1 + `\nmock: usage 10 10 0.15\nmock: waitfile ` + g2 + `\nmock: say done-kid`
	root := create(t, d, api.CreateTaskInput{Title: "root", Start: true, Budget: "1USD",
		Prompt: `mock: call create_task_kandev {"title":"kid","prompt":"` + kidPrompt + `"}`})
	if b := root.Budget; b == nil || b.Holder != root.ID || b.Amount.Kind != core.BudgetCost || b.Amount.Value != 1 || b.Amount.Currency != "USD" {
		t.Fatalf("root budget %+v", b)
	}
	kid := child(t, d, root.ID)
	if b := get(t, d, kid.ID).Budget; b == nil || b.Holder != root.ID {
		t.Fatalf("the kid shows budget %+v, want its root's", b)
	}

	// 85%: one notice to each running agent of the tree.
	daemontest.Eventually(t, wait, "the 80% notice and 90% spent", func() bool {
		b := get(t, d, root.ID).Budget
		return b != nil && b.Noticed && near(b.Spent, 0.90)
	})
	q, err := d.Client.TaskQueue(context.Background(), kid.ID)
	if err != nil {
		t.Fatal(err)
	}
	notices := 0
	for _, it := range q.Items {
		if it.Kind == "budget" {
			notices++
		}
	}
	if notices != 1 {
		t.Fatalf("the kid's queue %+v, want one budget notice", q.Items)
	}
	// Checked after the report that crossed 80%, or the one after it.
	daemontest.Eventually(t, wait, "the root to read its notice", func() bool {
		return countPrompts(t, d, root.ID, "[kandev:budget] Your task's tree has spent $0.") == 1
	})
	// And to be done reading it: a turn still on the notice when the tree
	// reaches 105% is cut like the kid's, and its notice comes again after
	// the raise (a busy machine did that, and the root read it twice).
	waitSettled(t, d, root.ID)

	// 105%: the kid's running turn is stopped, the root goes to a person.
	if err := os.WriteFile(g1, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	daemontest.Eventually(t, wait, "the root with a person for its budget", func() bool { return get(t, d, root.ID).OverBudget() })
	k := waitState(t, d, kid.ID, core.SessionCancelled)
	if !strings.Contains(k.Session.EndReason, "spent $1.05 of its $1.00 budget") || k.Halted || k.Queued == 0 {
		t.Fatalf("kid after the budget: %+v session %+v", k, k.Session)
	}
	r := get(t, d, root.ID)
	if r.Assignee == nil || !r.Assignee.IsPerson() || r.Stalled.Reason != core.StallBudget || !strings.Contains(r.Stalled.Detail, "$1.05 of its $1.00") ||
		r.Budget == nil || !r.Budget.Reached || r.Budget.Remaining != 0 {
		t.Fatalf("root after the budget: assignee %+v stalled %+v budget %+v", r.Assignee, r.Stalled, r.Budget)
	}
	if w := d.Run("wait", root.ID); w.Code != 17 || !strings.Contains(w.Stdout+w.Stderr, "budget reached") {
		t.Fatalf("wait: exit %d %q %q", w.Code, w.Stdout, w.Stderr)
	}
	if !strings.Contains(d.MustRun("task", "list"), "budget") {
		t.Error("task list shows no budget badge")
	}
	// A restart keeps the tree held: the startup sweep kicks the kid (its
	// cut turn is queued), and the budget holds it.
	d.Restart()
	if r := get(t, d, root.ID); !r.OverBudget() || r.Budget == nil || !r.Budget.Reached {
		t.Fatalf("root after a restart: stalled %+v budget %+v", r.Stalled, r.Budget)
	}
	// No new turn starts in the tree: input is queued, not delivered.
	message(t, d, kid.ID, "mock: say extra")
	if bad := d.Run("task", "budget", root.ID, "--set", "1USD"); bad.Code == 0 || !strings.Contains(bad.Stderr, "leaves nothing to spend") {
		t.Fatalf("a raise below the spend: exit %d %q", bad.Code, bad.Stderr)
	}
	if got := countPrompts(t, d, kid.ID, "mock: say extra"); got != 0 {
		t.Fatalf("%d messages delivered to the kid while its tree is over budget", got)
	}

	// Raised: the root goes back to its role, the kid goes on where it
	// stopped (its cut turn again, then the queued message).
	if err := os.WriteFile(g2, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	raised := d.MustRun("task", "budget", root.ID, "--add", "5USD", "--cut-turn", "redeliver")
	if !strings.Contains(raised, "$1.05 of $6.00 spent") {
		t.Fatalf("task budget --add: %q", raised)
	}
	waitSaid(t, d, kid.ID, "done-kid")
	waitSaid(t, d, kid.ID, "extra")
	// The kid's last turn ends with no handoff: rule 4 stalls it, it is
	// reported to the root (ADR 0003), and the root's turn that only
	// acknowledges the report climbs to a person (ADR 0046). So the root
	// is with its role only between the raise and that climb: its history
	// says what happened, in order, and its end state is that stall, not
	// a second budget one.
	daemontest.Eventually(t, wait, "the kid's stall to climb from the root", func() bool {
		r := get(t, d, root.ID)
		return r.Stalled != nil && r.Stalled.Reason == "Stalled"
	})
	waitSettled(t, d, kid.ID)
	r = get(t, d, root.ID)
	if r.OverBudget() || r.Budget == nil || r.Budget.Reached || r.Assignee == nil || !r.Assignee.IsPerson() ||
		!strings.HasPrefix(r.Stalled.Detail, "stalled subtask "+kid.ID) || !strings.Contains(r.Stalled.Detail, "extra") {
		t.Fatalf("root after the raise and the kid's last turn: assignee %+v stalled %+v budget %+v", r.Assignee, r.Stalled, r.Budget)
	}
	if w := d.Run("wait", root.ID); w.Code != 12 {
		t.Fatalf("wait after the kid's stall: exit %d %q %q, want 12 (escalated)", w.Code, w.Stdout, w.Stderr)
	}
	// The root climbed for its budget once, was handed back by the raise,
	// then climbed for the kid's stall.
	var handoffs []string
	for _, m := range conversation(t, d, root.ID) {
		if m.Kind == core.MsgHandoff {
			handoffs = append(handoffs, m.Text)
		}
	}
	if len(handoffs) != 3 || !strings.HasPrefix(handoffs[0], "Budget: escalated from role:mock to person:operator") ||
		!strings.Contains(handoffs[1], "to role:mock by person:operator: the budget was raised") ||
		!strings.HasPrefix(handoffs[2], "Stalled: escalated from role:mock to person:operator: stalled subtask "+kid.ID) {
		t.Fatalf("the root's handoffs %q, want its budget's escalation, the hand-back, the kid's stall", handoffs)
	}
	// A turn the budget cut is a stop, not a stall: the kid stalled once,
	// after its last turn (the queued message), never after the cut one.
	var kidStalls int
	lastSaid := ""
	for _, m := range conversation(t, d, kid.ID) {
		switch m.Kind {
		case core.MsgAgent:
			lastSaid = strings.TrimSpace(m.Text)
		case core.MsgHandoff:
			if strings.HasPrefix(m.Text, "Stalled: reported to task "+root.ID) {
				kidStalls++
				if lastSaid != "extra" {
					t.Errorf("the kid was reported stalled after saying %q, want only after its last turn (extra)", lastSaid)
				}
			}
		}
	}
	if kidStalls != 1 {
		t.Fatalf("the kid was reported stalled %d times, want once", kidStalls)
	}
	if n := countPrompts(t, d, kid.ID, "[kandev:budget] The tree of task "+root.ID+" (root), which your task is part of, has spent"); n != 1 {
		t.Fatalf("the kid read %d budget notices, want 1", n)
	}
	if n := countPrompts(t, d, kid.ID, "[kandev:budget] Your turn on this message was stopped"); n != 1 {
		t.Fatalf("the kid's cut turn came again %d times, want once", n)
	}
	if n := countPrompts(t, d, root.ID, "[kandev:budget]"); n != 1 {
		t.Fatalf("the root read %d budget notices, want 1", n)
	}
	if u := usageOf(t, d, root.ID); !near(u.Tree.Cost, 2.10) {
		t.Fatalf("tree cost %v, want 2.10 (the cut turn ran again)", u.Tree.Cost)
	}
}

// Bad amounts are refused with a clear error and change nothing.
func TestBudgetBadAmountsRefused(t *testing.T) {
	d := daemontest.Start(t)
	for amount, want := range map[string]string{
		"5":         `budget "5": no currency`,
		"0USD":      "must be more than zero",
		"-1USD":     "must be more than zero",
		"1.2.3USD":  "not a number",
		"lots":      "no currency",
		"x-tokens":  "not a number of tokens",
		"0M-tokens": "must be more than zero",
	} {
		r := d.Run("task", "create", "t", "--profile", "mock", "--cwd", os.TempDir(), "--budget", amount)
		if r.Code == 0 || !strings.Contains(r.Stderr, want) || !strings.Contains(r.Stderr, "5USD or 2M-tokens") {
			t.Errorf("--budget %s: exit %d %q, want %q", amount, r.Code, r.Stderr, want)
		}
	}
	if out := d.MustRun("task", "list", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("a refused create made a task: %s", out)
	}
	id := strings.TrimSpace(d.MustRun("task", "create", "t", "--profile", "mock", "--cwd", os.TempDir()))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--add", "1USD"}, "no budget of its own to add to"},
		{[]string{"--set", "1USD", "--add", "1USD"}, "not both"},
		{[]string{"--set", "2USD"}, ""},
		{[]string{"--add", "1M-tokens"}, "add an amount of the same kind"},
		{[]string{"--set", "nope"}, "no currency"},
	} {
		r := d.Run(append([]string{"task", "budget", id}, c.args...)...)
		switch {
		case c.want == "" && r.Code != 0:
			t.Errorf("task budget %v: exit %d %q", c.args, r.Code, r.Stderr)
		case c.want != "" && (r.Code == 0 || !strings.Contains(r.Stderr, c.want)):
			t.Errorf("task budget %v: exit %d %q, want %q", c.args, r.Code, r.Stderr, c.want)
		}
	}
	if b := get(t, d, id).Budget; b == nil || b.Amount.Value != 2 || b.Amount.Currency != "USD" {
		t.Fatalf("budget %+v, want the 2USD set, untouched by the refused changes", b)
	}
	if tok := d.MustRun("task", "budget", id, "--set", "2M-tokens"); !strings.Contains(tok, "0 tokens of 2M tokens spent") {
		t.Fatalf("a token budget: %q", tok)
	}
}

// An agent cannot fix or raise a budget through any MCP tool: none is
// listed, and create_task_kandev takes no budget.
func TestAgentCannotSetBudget(t *testing.T) {
	d := daemontest.Start(t)
	task := create(t, d, api.CreateTaskInput{Title: "agent", Start: true, Budget: "1USD",
		Prompt: "mock: tools\n" + `mock: call create_task_kandev {"title":"kid","budget":"100USD"}` + "\n" +
			`mock: call set_task_title_kandev {"title":"renamed","budget":"100USD"}`})
	waitSettled(t, d, task.ID)
	var tools string
	for _, s := range said(t, d, task.ID) {
		if strings.HasPrefix(s, "tools: ") {
			tools = s
		}
	}
	if tools == "" || strings.Contains(strings.ToLower(tools), "budget") {
		t.Fatalf("tools listed: %q", tools)
	}
	if !saidContains(t, d, task.ID, "error create_task_kandev: VALIDATION_ERROR") {
		t.Fatalf("the create with a budget was not refused: %q", said(t, d, task.ID))
	}
	tasks, err := d.Client.ListTasks(context.Background(), api.ListTasksInput{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 {
		t.Fatalf("%d tasks, want the agent's own only", len(tasks))
	}
	if b := get(t, d, task.ID).Budget; b == nil || b.Amount.Value != 1 {
		t.Fatalf("budget %+v, want 1USD untouched", b)
	}

	// What it may do is see its spend and what is left.
	message(t, d, task.ID, "mock: usage 10 10 0.25")
	waitSettled(t, d, task.ID)
	message(t, d, task.ID, "mock: call get_task_kandev {}")
	waitSaid(t, d, task.ID, "result get_task_kandev")
	var res string
	for _, s := range said(t, d, task.ID) {
		if strings.HasPrefix(s, "result get_task_kandev") {
			res = s
		}
	}
	// Tokens of its turns that reported none are estimates (ADR 0077).
	for _, want := range []string{`"spent":0.25`, `"remaining":0.75`, `"input_tokens":10,"output_tokens":10`, `"currency":"USD"`} {
		if !strings.Contains(res, want) {
			t.Errorf("get_task_kandev lacks %s: %s", want, res)
		}
	}
}

// autopilot_budget gives a new top-level autopilot task a budget of its
// own; a normal task, or one given its own, keeps what it was given.
func TestAutopilotBudgetFromConfig(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_AUTOPILOT_BUDGET=3USD"))
	auto := create(t, d, api.CreateTaskInput{Title: "auto", Autopilot: true})
	if b := auto.Budget; b == nil || b.Amount.Value != 3 || b.Amount.Currency != "USD" || b.SetBy.String() != "config" || b.Holder != auto.ID {
		t.Fatalf("autopilot root budget %+v", b)
	}
	own := create(t, d, api.CreateTaskInput{Title: "own", Autopilot: true, Budget: "1M-tokens"})
	if b := own.Budget; b == nil || b.Amount.Kind != core.BudgetTokens {
		t.Fatalf("given budget %+v", b)
	}
	if b := create(t, d, api.CreateTaskInput{Title: "normal"}).Budget; b != nil {
		t.Fatalf("normal task budget %+v", b)
	}
	kid := create(t, d, api.CreateTaskInput{Title: "kid", ParentID: auto.ID, Autopilot: true})
	if b := kid.Budget; b == nil || b.Holder != auto.ID {
		t.Fatalf("an autopilot child shows %+v, want its root's budget", b)
	}
}

// reported is a spend's tokens as the agents reported them: without
// kandev's estimate for turns that reported none (ADR 0077; a turn that
// only acks a notice streams a few bytes).
func reported(s core.Spend) int64 { return s.Tokens - s.EstimatedTokens }
