package engine

// Spend: what an agent reports using (ADR 0051). A turn's token counts come
// in its session/prompt response's usage; a usage_update notification
// carries the context window's use and the session's cumulative cost. Both
// are unstable in the ACP schema, so every field may be missing, and an
// agent may report nothing at all.

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/store"
)

// microsPerUnit: costs are stored in millionths of their currency, so sums
// are exact.
const microsPerUnit = 1e6

// The bounds of a plausible report (docs/usage.md, ADR 0075): a report
// past one holds the tree for a person with its raw figures, rather than
// counting as 0.
const (
	// maxReportCost: what one usage_update may add, in its currency.
	maxReportCost = 1000
	// maxCumulativeCost: a session's cumulative cost, in its currency.
	maxCumulativeCost = 1_000_000
	// maxReportTokens: any one token count of a turn's report.
	maxReportTokens = 100_000_000
)

// rawNumber writes a reported number as it came, for the operator.
func rawNumber(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

var _ agent.UsageHandler = (*recorder)(nil)

// usageUpdate records a usage_update: the context window's figures, and
// what the session's cumulative cost grew by since its last report. A
// cumulative cost lower than the last one is a new count from zero (a new
// agent session, a process that resumed one): all of it is new spend.
// r.mu is held (Update).
func (r *recorder) usageUpdate(u *acp.SessionUsageUpdate) {
	var spend store.Usage
	if c := u.Cost; c != nil {
		// An agent is untrusted input: a cost is counted only in an ISO
		// 4217 code's shape, three letters, and only when plausible;
		// anything else holds the tree for a person, never counts as 0.
		cur, ok := currencyCode(c.Currency)
		switch {
		case !ok:
			r.runs.spend.implausibleAsync(r.taskID, fmt.Sprintf("a cost of %s in %q, not a three-letter currency", rawNumber(c.Amount), truncateRunes(c.Currency, 40)))
			return
		case math.IsNaN(c.Amount) || math.IsInf(c.Amount, 0) || c.Amount < 0 || c.Amount > maxCumulativeCost:
			r.runs.spend.implausibleAsync(r.taskID, fmt.Sprintf("a cumulative cost of %s %s", rawNumber(c.Amount), cur))
			return
		}
		spend.CostMicros = r.runs.spend.state.costDelta(r.sessionID, c.Amount, cur)
		spend.Currency = cur
		if spend.CostMicros > maxReportCost*microsPerUnit {
			r.runs.spend.implausibleAsync(r.taskID, fmt.Sprintf("a cumulative cost of %s %s, %s more in one report (more than %d %s)",
				rawNumber(c.Amount), cur, rawNumber(float64(spend.CostMicros)/microsPerUnit), maxReportCost, cur))
			return
		}
	}
	used, size := int64(max(u.Used, 0)), int64(max(u.Size, 0))
	if spend.CostMicros == 0 && size == 0 {
		return
	}
	r.runs.spend.recordUsage(r.taskID, r.sessionID, r.profile(), spend, false, used, size)
}

// An agent that reports no token counts until its turn ends (most do:
// they come in the prompt response) is counted mid-turn by an estimate
// from the text it streams, messages and thoughts: bytesPerToken bytes a
// token, recorded each estimateStep tokens and at the turn's end, and
// marked as an estimate wherever it is shown; the agent's own figure for
// the turn, when it comes, replaces it wholly (ADR 0077). So a token
// budget or limit stops a turn that runs past it.
const (
	bytesPerToken = 4
	estimateStep  = 1024
)

// countStreamed adds n streamed bytes to the turn's estimate, recording
// it each estimateStep tokens. r.mu is held.
func (r *recorder) countStreamed(n int) {
	if r.estDone {
		return
	}
	r.estBytes += int64(n)
	if r.estBytes/bytesPerToken-r.estTokens >= estimateStep {
		r.recordEstimateLocked()
	}
}

// recordEstimateLocked records what the turn's estimate grew by since it
// was last recorded. r.mu is held.
func (r *recorder) recordEstimateLocked() {
	d := r.estBytes/bytesPerToken - r.estTokens
	if d <= 0 || r.estDone {
		return
	}
	r.estTokens += d
	r.runs.spend.recordSpend(store.UsageReport{TaskID: r.taskID, SessionID: r.sessionID, Profile: r.profile(),
		Usage: store.Usage{Tokens: d}, EstimateKey: r.estimateKey(), Estimated: true})
}

// settleEstimate records the rest of the turn's estimate when its turn
// ended with no token counts of the agent's own.
func (r *recorder) settleEstimate() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recordEstimateLocked()
}

// estimateKey names this turn's estimate: the session and the turn.
func (r *recorder) estimateKey() string { return r.sessionID + "/" + strconv.Itoa(r.turn) }

// TurnUsage implements agent.UsageHandler: a turn's token counts from its
// prompt response, which replace the turn's estimate. It is recorded even
// for a run a stop released: what was spent was spent.
func (r *recorder) TurnUsage(u acp.Usage) {
	for _, f := range []struct {
		name string
		n    *int
	}{{"inputTokens", &u.InputTokens}, {"outputTokens", &u.OutputTokens}, {"totalTokens", &u.TotalTokens},
		{"thoughtTokens", u.ThoughtTokens}, {"cachedReadTokens", u.CachedReadTokens}, {"cachedWriteTokens", u.CachedWriteTokens}} {
		if f.n != nil && (*f.n < 0 || int64(*f.n) > maxReportTokens) {
			r.runs.spend.implausibleAsync(r.taskID, fmt.Sprintf("a turn's %s of %d (a report counts 0 to %d tokens)", f.name, *f.n, int64(maxReportTokens)))
			return
		}
	}
	in, out := int64(max(u.InputTokens, 0)), int64(max(u.OutputTokens, 0))
	spend := store.Usage{Input: in, Output: out, Thought: optTokens(u.ThoughtTokens),
		CacheRead: optTokens(u.CachedReadTokens), CacheWrite: optTokens(u.CachedWriteTokens)}
	spend.Tokens = int64(max(u.TotalTokens, 0))
	if spend.Tokens == 0 {
		spend.Tokens = spend.Input + spend.Output + spend.Thought + spend.CacheRead + spend.CacheWrite
	}
	if spend.Tokens == 0 {
		// No figure of the agent's own: the estimate stands.
		if !spend.Zero() {
			r.runs.spend.recordUsage(r.taskID, r.sessionID, r.profile(), spend, true, 0, 0)
		}
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := store.UsageReport{TaskID: r.taskID, SessionID: r.sessionID, Profile: r.profile(), Usage: spend, Turn: true}
	if r.estTokens > 0 {
		rep.EstimateKey = r.estimateKey()
	}
	r.estDone = true
	r.runs.spend.recordSpend(rep)
}

func (r *recorder) profile() string {
	if r.run != nil {
		return r.run.profile
	}
	return ""
}

// currencyCode is a currency as kandev keeps it: three ASCII letters,
// upper case.
func currencyCode(c string) (string, bool) {
	if len(c) != 3 {
		return "", false
	}
	b := []byte(c)
	for i, x := range b {
		switch {
		case x >= 'A' && x <= 'Z':
		case x >= 'a' && x <= 'z':
			b[i] = x - 'a' + 'A'
		default:
			return "", false
		}
	}
	return string(b), true
}

func optTokens(p *int) int64 {
	if p == nil || *p < 0 {
		return 0
	}
	return int64(*p)
}

// Spend is the engine's spend area (rule 6, ADR 0051, docs/usage.md):
// the spend reports an agent's recorder makes (recordUsage), summed into
// the task's and its ancestors' rows; `kandev usage` (Usage) and a
// person's budget (SetBudget), api.Spender's operations, which the daemon
// routes here; the checks after each report (the 80% notice, stopping a
// tree that reached its budget, the Budget escalation: budget.go), the
// hold a reached budget puts on a tree (budgetHold), the budget a task
// shows (governingBudget) and the one it starts with (createBudget). Its
// fields are all it may touch: the kernel, its own state, and what other
// areas give it, each named.
//
// Locks: state.mu and state.budgetMu (spendState) are its own. state.mu
// is a leaf, taken under a recorder's r.mu (usageUpdate). state.budgetMu
// is taken first: checkBudgets and SetBudget hold it over the store's
// reads and transactions, the cache's read lock (ancestors, subtree) and
// a task's rt.mu (hasRun, budgetStop, the escalation's handoff); it is
// never taken under a task's rt.mu or a recorder's r.mu (a report's check
// runs off the recorder's goroutine: checkBudgetsAsync).
type Spend struct {
	k *kernel
	// state: sessions' cumulative costs and the budget lock.
	state spendState
	// procWG is the engine's wait group of process teardowns and timers
	// (Close waits on it): a report's budget check runs under it.
	procWG *sync.WaitGroup

	// What the other areas give it (compose.go):
	// may is the authorizer (authorize.go): only a person sets a budget.
	may func(a core.Actor, act Action, t core.Task) error
	// task resolves a task reference (kernel.go); getTask is the task's
	// view as GetTask shows it (tasks.go), SetBudget's answer.
	task    func(ctx context.Context, ref string) (core.Task, error)
	getTask func(ctx context.Context, id string) (core.Task, error)
	// releaseRunLocked and terminate are the runs' (runs.go): a reached
	// budget stops a running turn as a stop does.
	releaseRunLocked func(run *liveRun)
	terminate        func(run *liveRun)
	// staleQuestionTx is the questions' (questions.go): a stopped task's
	// pending question goes stale.
	staleQuestionTx func(ctx context.Context, tx *store.Tx, taskID, why string, c *changes) error
	// describeSender names a cut prompt's sender (render.go) in the notice
	// that queues it again.
	describeSender func(sender string) string
	// handoff is the handoffs' (handoff.go): a reached budget's holder goes
	// to a person, a raised one back.
	handoff func(ctx context.Context, t core.Task, target core.Ref, hander, message string, stall *core.Stall) (api.HandoffResult, error)
}

// spendState is the engine's memory of spend: each live session's last
// cumulative cost, and the lock budget checks take.
type spendState struct {
	mu   sync.Mutex
	last map[string]float64 // by kandev session id (one agent process) and currency
	// budgetMu serialises budget checks and changes, so a notice goes out
	// once and a tree is stopped once.
	budgetMu sync.Mutex
	// limits are the spend limits reached in their window, by key
	// (limits.go), under mu.
	limits map[string]*limitMark
}

// costDelta is what a session's cumulative cost in a currency grew by, in
// millionths: each currency is its own count (ADR 0075).
func (s *spendState) costDelta(sessionID string, amount float64, currency string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		s.last = map[string]float64{}
	}
	key := sessionID + "\x00" + currency
	delta := amount - s.last[key]
	if delta < 0 {
		delta = amount
	}
	s.last[key] = amount
	return int64(math.Round(delta * microsPerUnit))
}

// recordUsage writes one report: the task's own sums and its subtree's,
// and every ancestor's subtree sums, in one transaction; then the
// budgets above the task are checked.
func (sp *Spend) recordUsage(taskID, sessionID, profile string, u store.Usage, turn bool, used, size int64) {
	sp.recordSpend(store.UsageReport{TaskID: taskID, SessionID: sessionID, Profile: profile,
		Usage: u, Turn: turn, ContextUsed: used, ContextSize: size})
}

// recordSpend writes one report (recordUsage), an estimate's too.
func (sp *Spend) recordSpend(r store.UsageReport) {
	ctx := context.Background()
	ancestors := sp.ancestors(r.TaskID)
	r.At = sp.now()
	r.Role = sp.roleOf(r.TaskID)
	u := r.Usage
	moved := u.Tokens != 0 || u.CostMicros != 0 || r.EstimateKey != ""
	err := sp.k.commit(ctx, func(tx *store.Tx, c *changes) error {
		c.touch(r.TaskID)
		if moved {
			c.touch(ancestors...)
		}
		return tx.AddUsage(ctx, r, ancestors)
	})
	if err != nil {
		sp.k.log.Error("record usage", "task", r.TaskID, "err", err)
		return
	}
	if moved {
		sp.checkBudgetsAsync(r.TaskID)
	}
}

// roleOf is the role a task is assigned to, "" for none.
func (sp *Spend) roleOf(id string) string {
	t, ok := sp.k.cached(id)
	if !ok || t.Assignee == nil || !t.Assignee.IsRole() {
		return ""
	}
	return t.Assignee.Name
}

// now is the engine's clock's time, in UTC.
func (sp *Spend) now() time.Time { return sp.k.now() }

// ancestors lists a task's ancestors, nearest first (parents are fixed at
// creation, so the cache's chain is the store's).
func (sp *Spend) ancestors(id string) []string {
	cv := sp.k.cache.rlock()
	defer cv.runlock()
	var out []string
	seen := map[string]bool{id: true}
	for t := cv.tasks[id]; t != nil && t.ParentID != "" && !seen[t.ParentID]; t = cv.tasks[t.ParentID] {
		seen[t.ParentID] = true
		out = append(out, t.ParentID)
	}
	return out
}

// subtree lists a task and its descendants.
func (sp *Spend) subtree(id string) []string {
	cv := sp.k.cache.rlock()
	defer cv.runlock()
	out := []string{id}
	for i := 0; i < len(out); i++ {
		out = append(out, cv.children[out[i]]...)
	}
	return out
}

// usageFromStore is a task_usage row as the task shows it: its spend and
// its own budget (an ancestor's is found by GetTask). A budget's Spent is
// what was spent in its currency; costs in others are Unpriced here
// (governingBudget and the checks convert them with the rates set).
func usageFromStore(u *store.TaskUsage) (*core.TaskUsage, *core.BudgetInfo) {
	if u == nil {
		return nil, nil
	}
	var usage *core.TaskUsage
	if u.Turns > 0 || !u.Own.Zero() || u.TreeTokens != 0 || u.TreeCost != 0 || u.ContextSize > 0 || u.OtherCosts != "" || u.TreeOtherCosts != "" {
		usage = &core.TaskUsage{Own: spendOf(u.Own), Turns: u.Turns, ContextUsed: u.ContextUsed, ContextSize: u.ContextSize,
			Tree: core.Spend{Tokens: u.TreeTokens, Cost: float64(u.TreeCost) / microsPerUnit, Currency: u.TreeCurrency}}
		usage.Own.SetEstimate(u.EstTokens)
		usage.Tree.SetEstimate(u.TreeEstTokens)
		usage.Own.Others = otherCosts(u.OtherCosts)
		usage.Tree.Others = otherCosts(u.TreeOtherCosts)
	}
	if u.BudgetKind == "" {
		if u.SpendFault == "" {
			return usage, nil
		}
		// Held for a report kandev would not count, with no budget: the
		// fault alone holds the tree.
		return usage, &core.BudgetInfo{Holder: u.TaskID, Reached: true, Fault: u.SpendFault}
	}
	a := core.Amount{Kind: u.BudgetKind, Value: float64(u.BudgetValue), Currency: u.BudgetCurrency}
	if a.Kind == core.BudgetCost {
		a.Value /= microsPerUnit
	}
	b := &core.BudgetInfo{Holder: u.TaskID, Amount: a, Reached: u.BudgetReached || u.SpendFault != "", Noticed: u.BudgetNoticed,
		SetBy: core.ParseBy(u.BudgetBy), Fault: u.SpendFault}
	if usage != nil {
		b.Spent, b.Unpriced = a.Spent(usage.Tree, nil)
	}
	b.Remaining = math.Max(0, a.Value-b.Spent)
	return usage, b
}

// otherCosts reads a row's costs in other currencies, in currency order.
func otherCosts(s string) []core.Cost {
	m := store.ParseCosts(s)
	if len(m) == 0 {
		return nil
	}
	out := make([]core.Cost, 0, len(m))
	for cur, v := range m {
		out = append(out, core.Cost{Amount: float64(v) / microsPerUnit, Currency: cur})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Currency < out[j].Currency })
	return out
}

func spendOf(u store.Usage) core.Spend {
	return core.Spend{Tokens: u.Tokens, Input: u.Input, Output: u.Output, Thought: u.Thought, CacheRead: u.CacheRead,
		CacheWrite: u.CacheWrite, Cost: float64(u.CostMicros) / microsPerUnit, Currency: u.Currency}
}

// rates are the exchange rates a person configured (currency_rates),
// read at each use: nil when none is set or the file is broken (then
// every other currency is unpriced: fail closed).
func (sp *Spend) rates() core.Rates {
	if sp.k.opts.Config == nil {
		return nil
	}
	cfg, err := sp.k.opts.Config()
	if err != nil {
		return nil
	}
	v, err := cfg.Get("currency_rates")
	if err != nil || v.Value == "" {
		return nil
	}
	r, err := core.ParseRates(v.Value)
	if err != nil {
		return nil
	}
	return r
}

// priced is a budget as a person reads it: what was spent in other
// currencies converted with the rates set. b is not changed.
func (sp *Spend) priced(b *core.BudgetInfo, tree *core.Spend) *core.BudgetInfo {
	if b == nil || len(b.Unpriced) == 0 || tree == nil {
		return b
	}
	c := *b
	c.Spent, c.Unpriced = c.Amount.Spent(*tree, sp.rates())
	c.Remaining = math.Max(0, c.Amount.Value-c.Spent)
	return &c
}

// Usage implements api.Spender: spend since a time, by task, profile or
// day, largest first (days in order).
func (sp *Spend) Usage(ctx context.Context, in api.UsageInput) (api.UsageReport, error) {
	switch in.By {
	case "":
		in.By = "task"
	case "task", "profile", "day":
	default:
		return api.UsageReport{}, core.Errorf(core.CodeValidation, "usage by %q: give task, profile or day", in.By)
	}
	groups, err := sp.k.db.UsageSince(ctx, in.Since, in.By)
	if err != nil {
		return api.UsageReport{}, mapStoreErr(err, "usage")
	}
	rep := api.UsageReport{Since: in.Since, By: in.By, Rows: []api.UsageRow{}}
	// A group is one key in one currency: rows of a key are merged, each
	// currency kept apart, and so is the total (ADR 0075).
	at := map[string]int{}
	for _, g := range groups {
		i, ok := at[g.Key]
		if !ok {
			i = len(rep.Rows)
			at[g.Key] = i
			row := api.UsageRow{Key: g.Key}
			if in.By == "task" {
				if t, ok := sp.k.cached(g.Key); ok {
					row.Title = t.Title
				}
			}
			rep.Rows = append(rep.Rows, row)
		}
		row := &rep.Rows[i]
		for _, s := range []*core.Spend{&row.Spend, &rep.Total} {
			s.Tokens += g.Usage.Tokens
			s.Input += g.Usage.Input
			s.Output += g.Usage.Output
			s.Thought += g.Usage.Thought
			s.CacheRead += g.Usage.CacheRead
			s.CacheWrite += g.Usage.CacheWrite
			s.SetEstimate(s.EstimatedTokens + g.EstTokens)
		}
		row.Turns += g.Turns
		rep.Turns += g.Turns
		if g.Usage.CostMicros != 0 && g.Usage.Currency != "" {
			addMicros(&row.Spend, g.Usage.Currency, g.Usage.CostMicros)
			addMicros(&rep.Total, g.Usage.Currency, g.Usage.CostMicros)
		}
	}
	if in.By != "day" {
		sort.SliceStable(rep.Rows, func(i, j int) bool {
			if rep.Rows[i].Tokens != rep.Rows[j].Tokens {
				return rep.Rows[i].Tokens > rep.Rows[j].Tokens
			}
			return rep.Rows[i].Key < rep.Rows[j].Key
		})
	}
	return rep, nil
}

// addMicros adds millionths of a currency to a spend, in that currency.
func addMicros(s *core.Spend, cur string, micros int64) {
	// Summed as millionths, converted once: sums stay exact.
	if s.Currency == "" || s.Currency == cur {
		s.Currency = cur
		s.Cost = float64(int64(math.Round(s.Cost*microsPerUnit))+micros) / microsPerUnit
		return
	}
	for i := range s.Others {
		if s.Others[i].Currency == cur {
			s.Others[i].Amount = float64(int64(math.Round(s.Others[i].Amount*microsPerUnit))+micros) / microsPerUnit
			return
		}
	}
	s.Others = append(s.Others, core.Cost{Amount: float64(micros) / microsPerUnit, Currency: cur})
}

var _ api.Spender = (*Spend)(nil)
