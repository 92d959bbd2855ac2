package core

import (
	"strings"
	"testing"
	"time"
)

func TestLimitWindowsAreUTC(t *testing.T) {
	at := time.Date(2026, 3, 4, 23, 59, 59, 0, time.FixedZone("UTC-5", -5*3600)) // 2026-03-05 04:59:59 UTC, a Thursday
	s, e := Window(PeriodDay, at)
	if s != time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC) || e != s.AddDate(0, 0, 1) {
		t.Fatalf("day window %v to %v", s, e)
	}
	s, e = Window(PeriodWeek, at)
	if s != time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC) || e != time.Date(2026, 3, 9, 0, 0, 0, 0, time.UTC) {
		t.Fatalf("week window %v to %v, want Monday to Monday", s, e)
	}
	// The edge: 00:00 UTC is the next window's.
	if s, _ := Window(PeriodDay, time.Date(2026, 3, 6, 0, 0, 0, 0, time.UTC)); s.Day() != 6 {
		t.Fatalf("00:00 is in the day before: %v", s)
	}
}

func TestParseLimits(t *testing.T) {
	ls, err := ParseLimits("day=5USD, profile:claude/week=2M-tokens,role:coder/day=1EUR")
	if err != nil || len(ls) != 3 {
		t.Fatalf("%+v %v", ls, err)
	}
	if ls[0].Key() != "home/day" || ls[1].Key() != "profile:claude/week" || ls[2].Key() != "role:coder/day" || ls[1].Amount.Kind != BudgetTokens {
		t.Fatalf("%+v", ls)
	}
	if !ls[0].Covers("x", "") || !ls[1].Covers("claude", "coder") || ls[1].Covers("codex", "") || !ls[2].Covers("codex", "coder") || ls[2].Covers("codex", "") {
		t.Fatal("covers")
	}
	for _, bad := range []string{"hour=5USD", "day", "day=lots", "team:x/day=1USD", "profile:/day=1USD", "day=1USD,day=2USD"} {
		if _, err := ParseLimits(bad); err == nil || !strings.Contains(err.Error(), "give limits such as") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	r := LimitReason(ls[1], "2.1M tokens", time.Date(2026, 3, 9, 0, 0, 0, 0, time.UTC))
	if !ByLimit(r) || !strings.Contains(r, "profile claude's week limit is reached") || !strings.Contains(r, "--profile claude") || ByLimit("the tree of task x spent $1 of its $1 budget") {
		t.Fatalf("reason %q", r)
	}
}
