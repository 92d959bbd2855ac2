package mockagent

import (
	"strconv"
	"strings"

	acp "github.com/coder/acp-go-sdk"
)

// mockContextSize is the context window `mock: usage` reports.
const mockContextSize = 200000

// reportUsage is `mock: usage IN OUT [COST[CUR]]`: the turn's token counts
// go in its prompt response (usage), and a usage_update follows at once
// with the context window's use and the session's cumulative cost in CUR
// (USD when not given; any text, as a hostile agent may send), as Claude
// Code's ACP adapter reports them. COST is this turn's, added to the
// session's count in its currency (one count a currency); "-" or nothing
// reports no cost. Repeated in a turn, the counts add up.
func (t *turn) reportUsage(arg string) {
	f := strings.Fields(arg)
	if len(f) < 2 || len(f) > 3 {
		t.sayf("error mock: usage: want IN OUT [COST], got %q", arg)
		return
	}
	// Negative counts are sent as given: a hostile agent's.
	in, err1 := strconv.Atoi(f[0])
	out, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		t.sayf("error mock: usage: token counts must be whole numbers, got %q", arg)
		return
	}
	var cost *acp.Cost
	if len(f) == 3 && f[2] != "-" {
		// COST[CUR], COST:ANY-CURRENCY-TEXT, or =RAW[CUR] (=RAW:TEXT): the
		// cumulative cost sent as given, negative or huge, not added up.
		spec, raw := strings.CutPrefix(f[2], "=")
		num, cur, colon := strings.Cut(spec, ":")
		if !colon {
			num = strings.TrimRightFunc(spec, func(r rune) bool { return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' })
			cur = spec[len(num):]
			if cur == "" {
				cur = "USD"
			}
		}
		c, err := strconv.ParseFloat(num, 64)
		if err != nil || (c < 0 && !raw) {
			t.sayf("error mock: usage: cost must be a number, got %q", f[2])
			return
		}
		if raw {
			cost = &acp.Cost{Amount: c, Currency: cur}
		} else {
			if t.s.cost == nil {
				t.s.cost = map[string]float64{}
			}
			t.s.cost[cur] += c
			cost = &acp.Cost{Amount: t.s.cost[cur], Currency: cur}
		}
	}
	if t.usage == nil {
		t.usage = &acp.Usage{}
	}
	t.usage.InputTokens += in
	t.usage.OutputTokens += out
	t.usage.TotalTokens += in + out
	t.update(acp.SessionUpdate{UsageUpdate: &acp.SessionUsageUpdate{SessionUpdate: "usage_update",
		Used: min(in+out, mockContextSize), Size: mockContextSize, Cost: cost}})
}
