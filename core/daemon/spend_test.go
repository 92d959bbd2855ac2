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

// Tests of issue 37: spend an agent cannot dodge.

// A budget's currency is the budget's (ADR 0075). An agent that reports
// 0.01 EUR under a 1USD budget with no rate set halts the tree at once,
// the reason naming both currencies and how to set a rate; a change of
// the budget is refused until a rate is set; with one, the EUR counts
// converted and the 500 USD that follows stops the tree. Every total
// keeps each currency apart: never $500.01.
func TestBudgetCurrencyIsTheBudgets(t *testing.T) {
	d := daemontest.Start(t)
	gate := filepath.Join(t.TempDir(), "gate")
	root := create(t, d, api.CreateTaskInput{Title: "root", Start: true, Budget: "1USD",
		Prompt: "mock: usage 10 10 0.01EUR\nmock: waitfile " + gate + "\nmock: usage 10 10 500\nmock: say done"})

	daemontest.Eventually(t, wait, "the root held for its EUR cost", func() bool { return get(t, d, root.ID).OverBudget() })
	r := get(t, d, root.ID)
	for _, want := range []string{"0.01 EUR", "its budget is in USD", "no rate from EUR to USD", "kandev config set currency_rates EUR/USD=RATE",
		"kandev task budget " + root.ID + " --set 1USD"} {
		if !strings.Contains(r.Stalled.Detail, want) {
			t.Errorf("the hold's reason lacks %q: %q", want, r.Stalled.Detail)
		}
	}
	if r.Budget == nil || !r.Budget.Reached || len(r.Budget.Unpriced) != 1 || r.Budget.Unpriced[0].Currency != "EUR" || r.Budget.Spent != 0 {
		t.Fatalf("root budget %+v", r.Budget)
	}
	waitState(t, d, root.ID, core.SessionCancelled)
	w := d.Run("wait", root.ID)
	if w.Code != 17 || !strings.Contains(w.Stdout+w.Stderr, "budget") {
		t.Fatalf("wait: exit %d %q %q", w.Code, w.Stdout, w.Stderr)
	}
	show := d.MustRun("task", "show", root.ID)
	if !strings.Contains(show, "0.01 EUR with no rate to USD") || !strings.Contains(show, "no rate from EUR to USD") {
		t.Errorf("task show:\n%s", show)
	}
	t.Logf("wait %s: exit %d: %s%s", root.ID, w.Code, w.Stdout, w.Stderr)
	t.Logf("task show %s:\n%s", root.ID, show)
	// Without a rate, no change of the budget lets it go on.
	if bad := d.Run("task", "budget", root.ID, "--set", "1USD"); bad.Code == 0 || !strings.Contains(bad.Stderr, "currency_rates EUR/USD=RATE") {
		t.Fatalf("a budget change with no rate: exit %d %q", bad.Code, bad.Stderr)
	}
	if bad := d.Run("config", "set", "currency_rates", "EUR=1.08"); bad.Code == 0 || !strings.Contains(bad.Stderr, "EUR/USD=1.08") {
		t.Fatalf("a bad rate: exit %d %q", bad.Code, bad.Stderr)
	}
	d.MustRun("config", "set", "currency_rates", "eur/usd=1.08")
	raised := d.MustRun("task", "budget", root.ID, "--set", "1USD", "--cut-turn", "redeliver")
	if !strings.Contains(raised, "$0.01 of $1.00 spent") {
		t.Fatalf("task budget --set with a rate: %q", raised)
	}
	if b := get(t, d, root.ID).Budget; b == nil || !near(b.Spent, 0.0108) || len(b.Unpriced) != 0 || b.Reached {
		t.Fatalf("the budget with a rate: %+v, want 0.01 EUR counted as $0.0108", b)
	}
	// The tree goes on; the 500 USD after the gate stops it, counted with
	// the EUR converted.
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	daemontest.Eventually(t, wait, "the root held for its budget again", func() bool {
		r := get(t, d, root.ID)
		return r.OverBudget() && r.Budget != nil && r.Budget.Reached && r.Budget.Spent > 500
	})
	r = get(t, d, root.ID)
	if r.Budget.Fault != "" || len(r.Budget.Unpriced) != 0 || !strings.Contains(r.Stalled.Detail, "of its $1.00 budget") {
		t.Fatalf("root after 500 USD: budget %+v stalled %+v", r.Budget, r.Stalled)
	}
	u := usageOf(t, d, root.ID)
	costs := u.Own.Costs()
	if len(costs) != 2 || costs[0].Currency != "EUR" || costs[1].Currency != "USD" || !near(costs[1].Amount, 500) {
		t.Fatalf("root's own costs %+v, want EUR and USD apart", costs)
	}
	// kandev usage: each currency apart, in the rows and the total.
	out := d.MustRun("usage")
	if strings.Contains(out, "500.01") || strings.Contains(out, "500.02") || !strings.Contains(out, "$500.00 and 0.0") && !strings.Contains(out, "EUR and $500.00") {
		t.Fatalf("kandev usage sums across currencies:\n%s", out)
	}
	var rep api.UsageReport
	if err := json.Unmarshal([]byte(d.MustRun("usage", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	tc := rep.Total.Costs()
	if len(rep.Rows) != 1 || len(tc) != 2 || !near(costOf(tc, "USD"), 500) || costOf(tc, "EUR") <= 0 || costOf(tc, "EUR") > 0.03 {
		t.Fatalf("usage --json total %+v rows %+v", rep.Total, rep.Rows)
	}
	if st := d.MustRun("status"); strings.Contains(st, "500.0") && !strings.Contains(st, " and ") {
		t.Errorf("status sums across currencies:\n%s", st)
	}
	if wide := d.MustRun("task", "list", "--wide"); !strings.Contains(wide, "EUR and $500.00") {
		t.Errorf("task list --wide:\n%s", wide)
	}
	t.Logf("raise with a rate: %s", raised)
	t.Logf("after 500 USD: budget %s; detail %s", budgetText(get(t, d, root.ID)), get(t, d, root.ID).Stalled.Detail)
	t.Logf("kandev usage:\n%s", out)
}

func budgetText(t core.Task) string {
	if t.Budget == nil {
		return "none"
	}
	b, _ := json.Marshal(t.Budget)
	return string(b)
}

func costOf(cs []core.Cost, cur string) float64 {
	for _, c := range cs {
		if c.Currency == cur {
			return c.Amount
		}
	}
	return 0
}

// Implausible reports fail closed (ADR 0075): a cumulative cost that is
// negative or past the bound, a cost in no three-letter currency, a
// negative or huge token count each hold the whole tree for a person with
// the raw figures in the reason, rather than counting as 0; a budget set
// on the tree's top task lets it go on.
func TestImplausibleReportsHoldTheTree(t *testing.T) {
	d := daemontest.Start(t)
	gate := filepath.Join(t.TempDir(), "gate")
	// A cost comes in a usage_update at once, and the turn is cut; a
	// turn's tokens come in its prompt response, at its end.
	cases := []struct {
		usage, raw string
		cut        bool
	}{
		{"10 10 =1e308", "a cumulative cost of 1e+308 USD", true},
		{"10 10 =-5EUR", "a cumulative cost of -5 EUR", true},
		{"10 10 1500", "1500 more in one report (more than 1000 USD)", true},
		{"10 10 2:US$", `a cost of 2 in "US$", not a three-letter currency`, true},
		{"-5 10", "a turn's inputTokens of -5", false},
		{"200000000 1", "a turn's inputTokens of 200000000", false},
	}
	roots := make([]core.Task, len(cases))
	for i, c := range cases {
		p := "mock: usage " + c.usage
		if c.cut {
			p += "\nmock: waitfile " + gate + "\nmock: say after"
		}
		roots[i] = create(t, d, api.CreateTaskInput{Title: "hostile " + c.usage, Start: true, Prompt: p})
	}
	// Under a budget, a kid's report holds its root's tree.
	kidPrompt := `mock: usage 1 1 =1e308\nmock: waitfile ` + gate + `\nmock: say kid-after`
	budgeted := create(t, d, api.CreateTaskInput{Title: "budgeted", Start: true, Budget: "5USD",
		Prompt: `mock: call create_task_kandev {"title":"kid","prompt":"` + kidPrompt + `"}`})
	kid := child(t, d, budgeted.ID)

	for i, c := range cases {
		id := roots[i].ID
		daemontest.Eventually(t, wait, "the tree of "+c.usage+" held", func() bool { return get(t, d, id).OverBudget() })
		r := get(t, d, id)
		if !strings.Contains(r.Stalled.Detail, c.raw) || !strings.Contains(r.Stalled.Detail, "implausible") ||
			r.Budget == nil || !r.Budget.Reached || !strings.Contains(r.Budget.Fault, c.raw) {
			t.Errorf("%s: stalled %+v budget %+v, want the raw %q", c.usage, r.Stalled, r.Budget, c.raw)
		}
		if u := r.Usage; u != nil && (len(u.Own.Costs()) != 0 || u.Own.Tokens > 100) {
			t.Errorf("%s: counted %+v", c.usage, u.Own)
		}
		if c.cut {
			waitState(t, d, id, core.SessionCancelled)
		}
	}
	daemontest.Eventually(t, wait, "the budgeted tree held for its kid's report", func() bool { return get(t, d, budgeted.ID).OverBudget() })
	b := get(t, d, budgeted.ID)
	if !strings.Contains(b.Stalled.Detail, "task "+kid.ID+"'s agent reported a cumulative cost of 1e+308 USD") || b.Budget.Spent != 0 {
		t.Fatalf("budgeted root: stalled %+v budget %+v", b.Stalled, b.Budget)
	}
	waitState(t, d, kid.ID, core.SessionCancelled)
	if w := d.Run("wait", roots[0].ID); w.Code != 17 {
		t.Fatalf("wait: exit %d %q %q", w.Code, w.Stdout, w.Stderr)
	}
	show := d.MustRun("task", "show", roots[0].ID)
	if !strings.Contains(show, "1e+308") {
		t.Errorf("task show lacks the raw figure:\n%s", show)
	}
	w0 := d.Run("wait", roots[0].ID)
	t.Logf("wait %s: exit %d: %s%s", roots[0].ID, w0.Code, w0.Stdout, w0.Stderr)
	t.Logf("task show %s:\n%s", roots[0].ID, show)
	// A person's budget lets the tree go on.
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	d.MustRun("task", "budget", roots[0].ID, "--set", "1USD")
	daemontest.Eventually(t, wait, "the first tree to go on", func() bool {
		r := get(t, d, roots[0].ID)
		return !r.OverBudget() && r.Budget != nil && r.Budget.Fault == "" && !r.Budget.Reached
	})
	if r := get(t, d, roots[1].ID); !r.OverBudget() {
		t.Fatalf("another tree went on: %+v", r.Stalled)
	}
}

// One story for a budget halt: kandev status says budget (not
// escalated), wait exits 17; a budget that leaves nothing to spend is
// refused, reached or not, and so is one under an ancestor's reached
// budget.
func TestBudgetHaltOneStory(t *testing.T) {
	d := daemontest.Start(t)
	gate := filepath.Join(t.TempDir(), "gate")
	root := create(t, d, api.CreateTaskInput{Title: "root", Start: true, Budget: "1USD", Prompt: "mock: usage 10 10 0.5"})
	// Below 80%: no notice queued to race the turn's end.
	waitSettled(t, d, root.ID)
	daemontest.Eventually(t, wait, "50% spent", func() bool { b := get(t, d, root.ID).Budget; return b != nil && near(b.Spent, 0.5) })
	// Not reached: a budget below what was spent is refused all the same.
	if bad := d.Run("task", "budget", root.ID, "--set", "0.5USD"); bad.Code == 0 || !strings.Contains(bad.Stderr, "leaves nothing to spend") {
		t.Fatalf("--set below the spend: exit %d %q", bad.Code, bad.Stderr)
	}
	if b := get(t, d, root.ID).Budget; b.Amount.Value != 1 || b.Reached {
		t.Fatalf("a refused change changed the budget: %+v", b)
	}
	message(t, d, root.ID, "mock: usage 1 1 0.6\nmock: waitfile "+gate)
	daemontest.Eventually(t, wait, "the root held for its budget", func() bool { return get(t, d, root.ID).OverBudget() })
	// A raise to what was spent leaves nothing: refused.
	if bad := d.Run("task", "budget", root.ID, "--add", "0.1USD"); bad.Code == 0 || !strings.Contains(bad.Stderr, "spent $1.10; a budget of $1.10 leaves nothing to spend") {
		t.Fatalf("--add to the spend: exit %d %q", bad.Code, bad.Stderr)
	}
	// A budget of a task under the reached one frees nothing: refused.
	kid := create(t, d, api.CreateTaskInput{Title: "kid", ParentID: root.ID})
	if bad := d.Run("task", "budget", kid.ID, "--set", "5USD"); bad.Code == 0 || !strings.Contains(bad.Stderr, "whose budget is reached") ||
		!strings.Contains(bad.Stderr, "kandev task budget "+root.ID+" --add") {
		t.Fatalf("a kid's budget under a reached root: exit %d %q", bad.Code, bad.Stderr)
	}
	if b := get(t, d, kid.ID).Budget; b == nil || b.Holder != root.ID {
		t.Fatalf("the kid's budget %+v, want its root's, unchanged", b)
	}
	// kandev status: budget, as wait, task list and the TUI say.
	st := d.MustRun("status")
	var line string
	for _, l := range strings.Split(st, "\n") {
		if strings.HasPrefix(l, root.ID) {
			line = l
		}
	}
	if !strings.Contains(line, "budget") || strings.Contains(line, "escalated") {
		t.Fatalf("kandev status lists the root as %q:\n%s", line, st)
	}
	if w := d.Run("wait", root.ID); w.Code != 17 {
		t.Fatalf("wait: exit %d %q %q", w.Code, w.Stdout, w.Stderr)
	}
	if list := d.MustRun("task", "list"); !strings.Contains(list, "budget") {
		t.Errorf("task list:\n%s", list)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if out := d.MustRun("task", "budget", root.ID, "--add", "1USD"); !strings.Contains(out, "$1.10 of $2.00 spent") {
		t.Fatalf("a raise past the spend: %q", out)
	}
}

// Raising a budget says what becomes of the turn it cut (ADR 0076):
// dropped unless the person says otherwise (nothing is spent again
// silently), delivered again from the start, or continued with a short
// note and not the message again.
func TestRaisingABudgetSaysWhatTheCutTurnDoes(t *testing.T) {
	d := daemontest.Start(t)
	gate := filepath.Join(t.TempDir(), "gate")
	prompt := "mock: usage 1 1 1.05\nmock: waitfile " + gate + "\nmock: say cut-done"
	modes := []string{"", "redeliver", "continue"}
	roots := map[string]core.Task{}
	for _, m := range modes {
		roots[m] = create(t, d, api.CreateTaskInput{Title: "cut " + m, Start: true, Budget: "1USD", Prompt: prompt})
	}
	for _, m := range modes {
		id := roots[m].ID
		daemontest.Eventually(t, wait, "the tree of "+m+" held", func() bool { return get(t, d, id).OverBudget() })
		waitState(t, d, id, core.SessionCancelled)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if bad := d.Run("task", "budget", roots[""].ID, "--add", "5USD", "--cut-turn", "maybe"); bad.Code == 0 || !strings.Contains(bad.Stderr, "give redeliver") {
		t.Fatalf("a bad --cut-turn: exit %d %q", bad.Code, bad.Stderr)
	}
	if bad := d.Run("task", "budget", roots[""].ID, "--cut-turn", "drop"); bad.Code == 0 || !strings.Contains(bad.Stderr, "goes with --set or --add") {
		t.Fatalf("--cut-turn alone: exit %d %q", bad.Code, bad.Stderr)
	}
	for _, m := range modes {
		args := []string{"task", "budget", roots[m].ID, "--add", "5USD"}
		if m != "" {
			args = append(args, "--cut-turn", m)
		}
		r := d.Run(args...)
		want := map[string]string{"": "were dropped", "redeliver": "delivered again", "continue": "go on where they stopped"}[m]
		if r.Code != 0 || !strings.Contains(r.Stderr, want) {
			t.Fatalf("raise %q: exit %d %q %q, want %q", m, r.Code, r.Stdout, r.Stderr, want)
		}
		t.Logf("kandev %s: %s%s", strings.Join(args, " "), r.Stdout, r.Stderr)
	}
	// Redelivered: the message from the start, spending again.
	waitSaid(t, d, roots["redeliver"].ID, "cut-done")
	if u := usageOf(t, d, roots["redeliver"].ID); !near(u.Own.Cost, 2.10) {
		t.Fatalf("redelivered: cost %v, want 2.10", u.Own.Cost)
	}
	// Continued: a short note, not the message again.
	cont := roots["continue"].ID
	daemontest.Eventually(t, wait, "the continue note", func() bool {
		return countPrompts(t, d, cont, "[kandev:budget] Your last turn (on a message from") == 1
	})
	waitSettled(t, d, cont)
	// Dropped (the default): nothing is delivered; the next message is.
	drop := roots[""].ID
	message(t, d, drop, "mock: say after-raise")
	waitSaid(t, d, drop, "after-raise")
	for _, id := range []string{cont, drop} {
		if n := countPrompts(t, d, id, "mock: usage 1 1 1.05"); n != 1 {
			t.Errorf("task %s: its message delivered %d times, want once", id, n)
		}
		if n := countPrompts(t, d, id, "[kandev:budget] Your turn on this message was stopped"); n != 0 {
			t.Errorf("task %s: its cut turn redelivered", id)
		}
		if saidContains(t, d, id, "cut-done") {
			t.Errorf("task %s: the cut turn went on from the start", id)
		}
		if u := usageOf(t, d, id); !near(u.Own.Cost, 1.05) {
			t.Errorf("task %s: cost %v, want 1.05 (nothing spent again)", id, u.Own.Cost)
		}
	}
	if q := get(t, d, drop); q.Queued != 0 {
		t.Errorf("the dropped tree still queues %d", q.Queued)
	}
	for _, m := range modes {
		u := usageOf(t, d, roots[m].ID)
		t.Logf("cut-turn %q: spent %s", m, u.UsageLine(false))
	}
}
