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
	"github.com/kandev/kandev/core/notify"
)

// A spend limit per day for the whole home (issue 37, ADR 0077), with the
// daemon's clock injected (KANDEV_TEST_CLOCK): two profiles share it; the
// report that reaches it stops every running turn under it and sends one
// task to a person, one notification for the window; no turn starts under
// it, across a daemon restart inside the window; at the next UTC day the
// window rolls by itself and turns start again; kandev usage --by day
// counts each UTC day apart.
func TestPerDayLimitWithAnInjectedClock(t *testing.T) {
	dir := t.TempDir()
	clock, hook := filepath.Join(dir, "clock"), filepath.Join(dir, "hook.log")
	setClock := func(at string) {
		t.Helper()
		if err := os.WriteFile(clock, []byte(at), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	setClock("2026-03-02T23:50:00Z")
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_TEST_CLOCK="+clock, "KANDEV_NOTIFY_COMMAND=cat >> "+hook))
	d.MustRun("profile", "add", "mock2", "--command", d.Bin, "--arg", "mock-agent")
	if bad := d.Run("limit", "set", "--per", "hour", "--amount", "1USD"); bad.Code == 0 || !strings.Contains(bad.Stderr, "give day or week") {
		t.Fatalf("a bad period: exit %d %q", bad.Code, bad.Stderr)
	}
	if bad := d.Run("limit", "set", "--per", "day", "--amount", "lots"); bad.Code == 0 || !strings.Contains(bad.Stderr, "5USD or 2M-tokens") {
		t.Fatalf("a bad amount: exit %d %q", bad.Code, bad.Stderr)
	}
	set := d.MustRun("limit", "set", "--per", "day", "--amount", "1USD")
	if !strings.Contains(set, "the home's day limit: $0.00 of $1.00 spent this day (until 2026-03-03 00:00 UTC)") {
		t.Fatalf("limit set: %q", set)
	}

	// A running turn of profile mock2, which the limit will cut.
	busy := create(t, d, api.CreateTaskInput{Title: "busy", Profile: "mock2", Start: true, Prompt: "mock: say busy-working\nmock: hang"})
	waitSaid(t, d, busy.ID, "busy-working")
	// Profile mock spends $0.60; profile mock2's $0.60 then reaches the
	// home's $1.00.
	a := create(t, d, api.CreateTaskInput{Title: "a", Start: true, Prompt: "mock: usage 1 1 0.6"})
	waitSettled(t, d, a.ID)
	gate := filepath.Join(dir, "gate")
	b := create(t, d, api.CreateTaskInput{Title: "b", Profile: "mock2", Start: true,
		Prompt: "mock: usage 1 1 0.6\nmock: waitfile " + gate + "\nmock: say b-after"})
	daemontest.Eventually(t, wait, "b with a person for the limit", func() bool { return get(t, d, b.ID).OverBudget() })
	waitState(t, d, b.ID, core.SessionCancelled)
	waitState(t, d, busy.ID, core.SessionCancelled)
	bt := get(t, d, b.ID)
	if !strings.Contains(bt.Stalled.Detail, "the home's day limit is reached: $1.20 of $1.00 spent this day; turns under it wait until 2026-03-03 00:00 UTC") {
		t.Fatalf("b's stall: %+v", bt.Stalled)
	}
	w := d.Run("wait", b.ID)
	if w.Code != 17 {
		t.Fatalf("wait: exit %d %q %q", w.Code, w.Stdout, w.Stderr)
	}
	list := d.MustRun("limit", "list")
	if !strings.Contains(list, "$1.20") || !strings.Contains(list, "reached: turns wait until 2026-03-03 00:00") {
		t.Fatalf("limit list:\n%s", list)
	}
	// The other task it stopped waits on it, and says so; wait exits 17
	// on it too.
	daemontest.Eventually(t, wait, "the busy task waiting on the limit", func() bool { return get(t, d, busy.ID).WaitCause == core.WaitLimit })
	wb := d.Run("wait", busy.ID)
	if wb.Code != 17 || !strings.Contains(wb.Stdout+wb.Stderr, "spend limit reached: the home's day limit is reached") {
		t.Fatalf("wait on the busy task: exit %d %q %q", wb.Code, wb.Stdout, wb.Stderr)
	}
	t.Logf("wait %s: exit %d: %s%s", busy.ID, wb.Code, wb.Stdout, wb.Stderr)
	t.Logf("task show %s:\n%s", busy.ID, d.MustRun("task", "show", busy.ID))
	t.Logf("wait %s: exit %d: %s%s", b.ID, w.Code, w.Stdout, w.Stderr)
	t.Logf("limit list:\n%s", list)
	t.Logf("task show %s:\n%s", b.ID, d.MustRun("task", "show", b.ID))

	// No turn starts under it: a's next message waits, across a restart
	// inside the window.
	message(t, d, a.ID, "mock: say a-again")
	setClock("2026-03-02T23:55:00Z")
	d.Restart()
	var ls []api.LimitStatus
	if err := json.Unmarshal([]byte(d.MustRun("limit", "list", "--json")), &ls); err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || !ls[0].Reached || !near(ls[0].Spent, 1.2) || ls[0].Scope != core.LimitHome {
		t.Fatalf("limit list --json after the restart: %+v", ls)
	}
	if at := get(t, d, a.ID); at.Queued != 1 || saidContains(t, d, a.ID, "a-again") || at.WaitCause != core.WaitLimit {
		t.Fatalf("a turn started under the reached limit: queued %d, waiting %q", at.Queued, at.Waiting)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	// The next UTC day: the window rolls by itself.
	setClock("2026-03-03T00:00:05Z")
	waitSaid(t, d, a.ID, "a-again")
	daemontest.Eventually(t, wait, "b handed back", func() bool { return !get(t, d, b.ID).OverBudget() })
	daemontest.Eventually(t, wait, "busy no longer waiting", func() bool { return get(t, d, busy.ID).WaitCause == "" })
	// Its cut turn is dropped, said so, never delivered again.
	daemontest.Eventually(t, wait, "the dropped turn's note", func() bool {
		return saidOrNoted(t, d, busy.ID, "the turn the home's day limit cut was dropped (the day rolled over)")
	})
	if err := json.Unmarshal([]byte(d.MustRun("limit", "list", "--json")), &ls); err != nil {
		t.Fatal(err)
	}
	if ls[0].Reached || ls[0].Spent != 0 || ls[0].WindowStart.Format("2006-01-02") != "2026-03-03" {
		t.Fatalf("the new day's limit: %+v", ls[0])
	}
	// One notification for the limit, not one per task it held.
	read := func() []string {
		b, _ := os.ReadFile(hook)
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var ev notify.Event
			if json.Unmarshal([]byte(l), &ev) == nil && strings.Contains(ev.Text, "limit is reached") {
				out = append(out, l)
			}
		}
		return out
	}
	daemontest.Eventually(t, wait, "the limit's notification", func() bool { return len(read()) > 0 })
	if n := read(); len(n) != 1 || !strings.Contains(n[0], b.ID) {
		t.Fatalf("notifications of the limit: %q", n)
	}
	// kandev usage by day: each UTC day apart.
	var rep api.UsageReport
	if err := json.Unmarshal([]byte(d.MustRun("usage", "--since", "2026-03-01", "--by", "day", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) < 1 || rep.Rows[0].Key != "2026-03-02" || !near(rep.Rows[0].Cost, 1.2) {
		t.Fatalf("usage by day: %+v", rep.Rows)
	}
	t.Logf("notification: %s", read()[0])
	t.Logf("kandev usage --since 2026-03-01 --by day:\n%s", d.MustRun("usage", "--since", "2026-03-01", "--by", "day"))
	t.Logf("limit list on the next day:\n%s", d.MustRun("limit", "list"))
}

// saidOrNoted says whether any entry of a task's conversation holds sub.
func saidOrNoted(t *testing.T, d *daemontest.Daemon, id, sub string) bool {
	t.Helper()
	return strings.Contains(d.MustRun("task", "log", id), sub)
}

// A limit from the configuration (spend_limits), for a role: the role's
// reports reach it, another role's do not count; kandev limit rm leaves
// the file's limit to the file.
func TestRoleLimitFromConfig(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_SPEND_LIMITS=role:mock/day=0.5USD"))
	d.MustRun("profile", "add", "other", "--command", d.Bin, "--arg", "mock-agent")
	free := create(t, d, api.CreateTaskInput{Title: "other role", Profile: "other", Start: true, Prompt: "mock: usage 1 1 0.6"})
	waitSettled(t, d, free.ID)
	if get(t, d, free.ID).OverBudget() {
		t.Fatal("another role's report reached role mock's limit")
	}
	capped := create(t, d, api.CreateTaskInput{Title: "role mock", Start: true, Prompt: "mock: usage 1 1 0.6\nmock: hang"})
	daemontest.Eventually(t, wait, "role mock's limit reached", func() bool { return get(t, d, capped.ID).OverBudget() })
	waitState(t, d, capped.ID, core.SessionCancelled)
	if detail := get(t, d, capped.ID).Stalled.Detail; !strings.Contains(detail, "role mock's day limit is reached: $0.60 of $0.50 spent this day") ||
		!strings.Contains(detail, "--role mock") {
		t.Fatalf("detail %q", detail)
	}
	list := d.MustRun("limit", "list")
	if !strings.Contains(list, "role mock") || !strings.Contains(list, "config") || !strings.Contains(list, "reached") {
		t.Fatalf("limit list:\n%s", list)
	}
	if bad := d.Run("limit", "rm", "--per", "day", "--role", "mock"); bad.Code == 0 || !strings.Contains(bad.Stderr, "kandev config set spend_limits") {
		t.Fatalf("limit rm of the config's limit: exit %d %q", bad.Code, bad.Stderr)
	}
	// One set on the CLI for the same scope and period wins; raised past
	// the day's spend, the task goes back and turns start again.
	raised := d.MustRun("limit", "set", "--per", "day", "--amount", "5USD", "--role", "mock")
	if !strings.Contains(raised, "role mock's day limit: $0.60 of $5.00 spent this day") || strings.Contains(raised, "reached") {
		t.Fatalf("limit set: %q", raised)
	}
	daemontest.Eventually(t, wait, "the capped task handed back", func() bool { return !get(t, d, capped.ID).OverBudget() })
	message(t, d, capped.ID, "mock: say going-again")
	waitSaid(t, d, capped.ID, "going-again")
	t.Logf("limit list:\n%s", list)
	t.Logf("kandev limit set --per day --amount 5USD --role mock: %s", raised)
}
