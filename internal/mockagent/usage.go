package mockagent

import (
	"strconv"
	"strings"

	acp "github.com/coder/acp-go-sdk"
)

// mockContextSize is the context window `mock: usage` reports.
const mockContextSize = 200000

// reportUsage is `mock: usage IN OUT [COST]`: the turn's token counts go in
// its prompt response (usage), and a usage_update follows at once with the
// context window's use and the session's cumulative cost in USD, as Claude
// Code's ACP adapter reports them. COST is this turn's; "-" or nothing
// reports no cost. Repeated in a turn, the counts add up.
func (t *turn) reportUsage(arg string) {
	f := strings.Fields(arg)
	if len(f) < 2 || len(f) > 3 {
		t.sayf("error mock: usage: want IN OUT [COST], got %q", arg)
		return
	}
	in, err1 := strconv.Atoi(f[0])
	out, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || in < 0 || out < 0 {
		t.sayf("error mock: usage: token counts must be whole numbers, got %q", arg)
		return
	}
	var cost *acp.Cost
	if len(f) == 3 && f[2] != "-" {
		c, err := strconv.ParseFloat(f[2], 64)
		if err != nil || c < 0 {
			t.sayf("error mock: usage: cost must be a number, got %q", f[2])
			return
		}
		t.s.cost += c
		cost = &acp.Cost{Amount: t.s.cost, Currency: "USD"}
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
