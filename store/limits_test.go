package store

import (
	"context"
	"testing"
	"time"
)

// A turn's estimate grows its row and every sum, and the agent's figure
// takes it back wholly (ADR 0077); a limit's spend counts a window's
// reports of its profile or role, estimates included; its reached mark is
// made once a window.
func TestEstimatesAndLimitSpend(t *testing.T) {
	ctx := context.Background()
	db := openFreshDB(t)
	mustInsert(t, db, i2Task("r", ""), i2Task("c", "r"))
	day := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	add := func(r UsageReport) {
		t.Helper()
		if err := db.AddUsage(ctx, r, []string{"r"}); err != nil {
			t.Fatal(err)
		}
	}
	est := UsageReport{TaskID: "c", SessionID: "s", Profile: "claude", Role: "coder", At: day.Add(time.Hour), Usage: Usage{Tokens: 1024},
		EstimateKey: "s/1", Estimated: true}
	add(est)
	add(est)
	rows, _ := db.TaskUsages(ctx, nil)
	if c, r := rows["c"], rows["r"]; c.Own.Tokens != 2048 || c.EstTokens != 2048 || c.TreeEstTokens != 2048 || r.TreeTokens != 2048 || r.TreeEstTokens != 2048 {
		t.Fatalf("estimate: c %+v r %+v", c, r)
	}
	if n, _, _ := db.LimitSpend(ctx, "role", "coder", day, day.AddDate(0, 0, 1)); n != 2048 {
		t.Fatalf("a role's limit counts %d, want the estimate's 2048", n)
	}
	// The agent's figure replaces it.
	add(UsageReport{TaskID: "c", SessionID: "s", Profile: "claude", Role: "coder", At: day.Add(2 * time.Hour), Turn: true,
		Usage: Usage{Input: 100, Output: 500, Tokens: 600, CostMicros: 20000, Currency: "USD"}, EstimateKey: "s/1"})
	rows, _ = db.TaskUsages(ctx, nil)
	if c, r := rows["c"], rows["r"]; c.Own.Tokens != 600 || c.EstTokens != 0 || r.TreeTokens != 600 || r.TreeEstTokens != 0 {
		t.Fatalf("replaced: c %+v r %+v", c, r)
	}
	// Another profile's report, the next day.
	add(UsageReport{TaskID: "r", SessionID: "s2", Profile: "codex", At: day.AddDate(0, 0, 1), Usage: Usage{Tokens: 7, CostMicros: 5, Currency: "EUR"}})
	for _, c := range []struct {
		scope, name string
		from        time.Time
		tokens      int64
		usd, eur    int64
	}{
		{"home", "", day, 600, 20000, 0},
		{"profile", "claude", day, 600, 20000, 0},
		{"profile", "codex", day, 0, 0, 0},
		{"role", "coder", day, 600, 20000, 0},
		{"home", "", day.AddDate(0, 0, 1), 7, 0, 5},
	} {
		n, costs, err := db.LimitSpend(ctx, c.scope, c.name, c.from, c.from.AddDate(0, 0, 1))
		if err != nil || n != c.tokens || costs["USD"] != c.usd || costs["EUR"] != c.eur {
			t.Errorf("%s %s from %v: %d %v %v", c.scope, c.name, c.from, n, costs, err)
		}
	}
	// By UTC day.
	groups, err := db.UsageSince(ctx, day, "day")
	if err != nil || len(groups) != 2 || groups[0].Key != "2026-03-02" || groups[1].Key != "2026-03-03" {
		t.Fatalf("by day %+v %v", groups, err)
	}
	first, err := db.MarkLimitReached(ctx, "home/day", day, day, "why", "c")
	if err != nil || !first {
		t.Fatal(first, err)
	}
	if again, _ := db.MarkLimitReached(ctx, "home/day", day, day, "why again", "r"); again {
		t.Fatal("marked twice in one window")
	}
	if ok, why, task, _ := db.LimitReached(ctx, "home/day", day); !ok || why != "why" || task != "c" {
		t.Fatalf("reached %v %q %q", ok, why, task)
	}
	if ok, _, _, _ := db.LimitReached(ctx, "home/day", day.AddDate(0, 0, 1)); ok {
		t.Fatal("the next window is reached")
	}
}
