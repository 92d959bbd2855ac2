package store

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Usage is one report of spend: token counts and a cost in millionths of
// Currency.
type Usage struct {
	Input, Output, Thought, CacheRead, CacheWrite, Tokens int64
	CostMicros                                            int64
	Currency                                              string
}

// Zero reports whether the usage carries nothing.
func (u Usage) Zero() bool {
	return u.Input == 0 && u.Output == 0 && u.Thought == 0 && u.CacheRead == 0 && u.CacheWrite == 0 &&
		u.Tokens == 0 && u.CostMicros == 0
}

// TaskUsage is a task's task_usage row.
type TaskUsage struct {
	TaskID       string
	Own          Usage
	Turns        int
	TreeTokens   int64
	TreeCost     int64
	TreeCurrency string
	ContextUsed  int64
	ContextSize  int64
	// The task's own budget: BudgetKind "" for none.
	BudgetKind     string
	BudgetValue    int64
	BudgetCurrency string
	BudgetBy       string
	BudgetNoticed  bool
	BudgetReached  bool
	// OtherCosts and TreeOtherCosts are the costs reported in another
	// currency than Own.Currency and TreeCurrency: "EUR=10000;GBP=5"
	// (millionths by code; ParseCosts), never added to those sums.
	OtherCosts     string
	TreeOtherCosts string
	// SpendFault is why the task's tree is held for a person although its
	// budget was not spent ("" for none): an implausible report, a cost
	// in a currency without a rate.
	SpendFault string
	// EstTokens and TreeEstTokens are how much of Own.Tokens and
	// TreeTokens is an estimate from streamed text (ADR 0077), not yet
	// replaced by the agent's own figure.
	EstTokens, TreeEstTokens int64
}

// ParseCosts reads an OtherCosts value: millionths by currency.
func ParseCosts(s string) map[string]int64 {
	if s == "" {
		return nil
	}
	out := map[string]int64{}
	for _, f := range strings.Split(s, ";") {
		cur, n, ok := strings.Cut(f, "=")
		if !ok {
			continue
		}
		if v, err := strconv.ParseInt(n, 10, 64); err == nil {
			out[cur] += v
		}
	}
	return out
}

// FormatCosts writes costs by currency as ParseCosts reads them, in
// currency order.
func FormatCosts(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if v != 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(k + "=" + strconv.FormatInt(m[k], 10))
	}
	return b.String()
}

const taskUsageColumns = `task_id, input, output, thought, cache_read, cache_write, tokens, cost_micros, currency, turns,
	tree_tokens, tree_cost_micros, tree_currency, context_used, context_size,
	budget_kind, budget_value, budget_currency, budget_by, budget_noticed, budget_reached,
	other_costs, tree_other_costs, spend_fault, est_tokens, tree_est_tokens`

func scanTaskUsage(s scanner) (TaskUsage, error) {
	var u TaskUsage
	err := s.Scan(&u.TaskID, &u.Own.Input, &u.Own.Output, &u.Own.Thought, &u.Own.CacheRead, &u.Own.CacheWrite,
		&u.Own.Tokens, &u.Own.CostMicros, &u.Own.Currency, &u.Turns, &u.TreeTokens, &u.TreeCost, &u.TreeCurrency,
		&u.ContextUsed, &u.ContextSize, &u.BudgetKind, &u.BudgetValue, &u.BudgetCurrency, &u.BudgetBy,
		&u.BudgetNoticed, &u.BudgetReached, &u.OtherCosts, &u.TreeOtherCosts, &u.SpendFault, &u.EstTokens, &u.TreeEstTokens)
	return u, err
}

// UsageReport is one recorded report, for AddUsage.
type UsageReport struct {
	TaskID    string
	SessionID string
	Profile   string
	At        time.Time
	Usage     Usage
	// Turn: the report is a turn's end (its prompt response).
	Turn bool
	// ContextUsed and ContextSize, when ContextSize > 0, replace the task's
	// latest context figures.
	ContextUsed, ContextSize int64
	// Role is the role the task is assigned to ("" for none): a role's
	// limit counts its reports.
	Role string
	// EstimateKey names one turn's estimate from streamed text (its
	// session and turn). With Estimated the report adds Usage.Tokens to
	// that estimate; without, the report is the agent's own figure for
	// the turn and the estimate is taken back first, wholly.
	EstimateKey string
	Estimated   bool
}

// AddUsage records a report and adds it to the task's own sums and to the
// subtree sums of the task and of each of its ancestors (given, nearest
// first): a parent's figure is kept, never computed when read. A cost in
// another currency than a sum's own is kept apart in its other costs,
// never added to it (ADR 0075).
func (q Queries) AddUsage(ctx context.Context, r UsageReport, ancestors []string) error {
	if r.EstimateKey != "" {
		if r.Estimated {
			return q.addEstimate(ctx, r, ancestors)
		}
		if err := q.dropEstimate(ctx, r.TaskID, r.EstimateKey, ancestors); err != nil {
			return err
		}
	}
	u := r.Usage
	if !u.Zero() {
		turn := 0
		if r.Turn {
			turn = 1
		}
		if _, err := q.q.ExecContext(ctx, `INSERT INTO usage_turns (task_id, session_id, profile, role, at, input, output, thought,
			cache_read, cache_write, tokens, cost_micros, currency, turn) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.TaskID, r.SessionID, r.Profile, r.Role, nanos(r.At), u.Input, u.Output, u.Thought, u.CacheRead, u.CacheWrite,
			u.Tokens, u.CostMicros, u.Currency, turn); err != nil {
			return fmt.Errorf("record usage: %w", mapErr(err))
		}
	}
	turns := 0
	if r.Turn {
		turns = 1
	}
	cost, cur := u.CostMicros, u.Currency
	if cost == 0 {
		cur = ""
	}
	if _, err := q.q.ExecContext(ctx, `INSERT INTO task_usage (task_id) VALUES (?) ON CONFLICT (task_id) DO NOTHING`, r.TaskID); err != nil {
		return fmt.Errorf("record usage: %w", mapErr(err))
	}
	ctxSet := r.ContextSize > 0
	if _, err := q.q.ExecContext(ctx, `UPDATE task_usage SET input = input + ?, output = output + ?, thought = thought + ?,
		cache_read = cache_read + ?, cache_write = cache_write + ?, tokens = tokens + ?,
		turns = turns + ?,
		context_used = CASE WHEN ? THEN ? ELSE context_used END,
		context_size = CASE WHEN ? THEN ? ELSE context_size END
		WHERE task_id = ?`,
		u.Input, u.Output, u.Thought, u.CacheRead, u.CacheWrite, u.Tokens, turns,
		ctxSet, r.ContextUsed, ctxSet, r.ContextSize, r.TaskID); err != nil {
		return fmt.Errorf("record usage: %w", mapErr(err))
	}
	if err := q.addCost(ctx, r.TaskID, "currency", "cost_micros", "other_costs", cost, cur); err != nil {
		return fmt.Errorf("record usage: %w", err)
	}
	if u.Tokens == 0 && cost == 0 {
		return nil
	}
	for _, id := range append([]string{r.TaskID}, ancestors...) {
		if _, err := q.q.ExecContext(ctx, `INSERT INTO task_usage (task_id) VALUES (?) ON CONFLICT (task_id) DO NOTHING`, id); err != nil {
			return fmt.Errorf("record subtree usage: %w", mapErr(err))
		}
		if _, err := q.q.ExecContext(ctx, `UPDATE task_usage SET tree_tokens = tree_tokens + ? WHERE task_id = ?`, u.Tokens, id); err != nil {
			return fmt.Errorf("record subtree usage: %w", mapErr(err))
		}
		if err := q.addCost(ctx, id, "tree_currency", "tree_cost_micros", "tree_other_costs", cost, cur); err != nil {
			return fmt.Errorf("record subtree usage: %w", err)
		}
	}
	return nil
}

// addEstimate grows a turn's estimate by r.Usage.Tokens: its usage_turns
// row (made at the first), the task's tokens and est_tokens, and the
// subtree sums of the task and its ancestors.
func (q Queries) addEstimate(ctx context.Context, r UsageReport, ancestors []string) error {
	n := r.Usage.Tokens
	if n <= 0 {
		return nil
	}
	res, err := q.q.ExecContext(ctx, `UPDATE usage_turns SET tokens = tokens + ? WHERE estimate_key = ?`, n, r.EstimateKey)
	if err != nil {
		return fmt.Errorf("record estimate: %w", mapErr(err))
	}
	if k, err := res.RowsAffected(); err != nil || k == 0 {
		if _, err := q.q.ExecContext(ctx, `INSERT INTO usage_turns (task_id, session_id, profile, role, at, tokens, estimate_key)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, r.TaskID, r.SessionID, r.Profile, r.Role, nanos(r.At), n, r.EstimateKey); err != nil {
			return fmt.Errorf("record estimate: %w", mapErr(err))
		}
	}
	return q.addEstimateSums(ctx, r.TaskID, ancestors, n)
}

// addEstimateSums adds n estimated tokens (negative: takes them back) to
// a task's own sums and to the subtree sums of it and its ancestors.
func (q Queries) addEstimateSums(ctx context.Context, taskID string, ancestors []string, n int64) error {
	if _, err := q.q.ExecContext(ctx, `INSERT INTO task_usage (task_id) VALUES (?) ON CONFLICT (task_id) DO NOTHING`, taskID); err != nil {
		return fmt.Errorf("record estimate: %w", mapErr(err))
	}
	if _, err := q.q.ExecContext(ctx, `UPDATE task_usage SET tokens = tokens + ?, est_tokens = est_tokens + ? WHERE task_id = ?`,
		n, n, taskID); err != nil {
		return fmt.Errorf("record estimate: %w", mapErr(err))
	}
	for _, id := range append([]string{taskID}, ancestors...) {
		if _, err := q.q.ExecContext(ctx, `INSERT INTO task_usage (task_id) VALUES (?) ON CONFLICT (task_id) DO NOTHING`, id); err != nil {
			return fmt.Errorf("record estimate: %w", mapErr(err))
		}
		if _, err := q.q.ExecContext(ctx, `UPDATE task_usage SET tree_tokens = tree_tokens + ?, tree_est_tokens = tree_est_tokens + ?
			WHERE task_id = ?`, n, n, id); err != nil {
			return fmt.Errorf("record estimate: %w", mapErr(err))
		}
	}
	return nil
}

// dropEstimate takes a turn's estimate back, wholly, from every sum it
// was added to: the agent's own figure replaces it.
func (q Queries) dropEstimate(ctx context.Context, taskID, key string, ancestors []string) error {
	var n int64
	err := q.q.QueryRowContext(ctx, `SELECT coalesce(sum(tokens), 0) FROM usage_turns WHERE estimate_key = ?`, key).Scan(&n)
	if err != nil {
		return fmt.Errorf("replace estimate: %w", mapErr(err))
	}
	if _, err := q.q.ExecContext(ctx, `DELETE FROM usage_turns WHERE estimate_key = ?`, key); err != nil {
		return fmt.Errorf("replace estimate: %w", mapErr(err))
	}
	if n == 0 {
		return nil
	}
	return q.addEstimateSums(ctx, taskID, ancestors, -n)
}

// addCost adds a cost to a row's sum in its currency (the first one
// reported) or, in another currency, to its other costs: never across
// currencies. The columns are given by the caller, never by input.
func (q Queries) addCost(ctx context.Context, id, curCol, sumCol, otherCol string, cost int64, cur string) error {
	if cost == 0 || cur == "" {
		return nil
	}
	res, err := q.q.ExecContext(ctx, `UPDATE task_usage SET `+sumCol+` = `+sumCol+` + ?, `+curCol+` = ?
		WHERE task_id = ? AND `+curCol+` IN ('', ?)`, cost, cur, id, cur)
	if err != nil {
		return mapErr(err)
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return mapErr(err)
	}
	var other string
	if err := q.q.QueryRowContext(ctx, `SELECT `+otherCol+` FROM task_usage WHERE task_id = ?`, id).Scan(&other); err != nil {
		return mapErr(err)
	}
	m := ParseCosts(other)
	if m == nil {
		m = map[string]int64{}
	}
	m[cur] += cost
	_, err = q.q.ExecContext(ctx, `UPDATE task_usage SET `+otherCol+` = ? WHERE task_id = ?`, FormatCosts(m), id)
	return mapErr(err)
}

// TaskUsage reads one task's row; ok is false when it has none.
func (q Queries) TaskUsage(ctx context.Context, id string) (TaskUsage, bool, error) {
	u, err := scanTaskUsage(q.q.QueryRowContext(ctx, `SELECT `+taskUsageColumns+` FROM task_usage WHERE task_id = ?`, id))
	if err != nil {
		if err = mapErr(err); err == ErrNotFound {
			return TaskUsage{}, false, nil
		}
		return TaskUsage{}, false, fmt.Errorf("read usage of %s: %w", id, err)
	}
	return u, true, nil
}

// allTaskUsageQuery reads every row as one text value, as
// allTaskRowsQuery reads tasks (ADR 0040): through the driver, 21 columns
// a row cost the daemon's start half a second at 100,000 rows. budget_by,
// the one free text, comes last, so a separator in it is seen.
const allTaskUsageQuery = `SELECT concat_ws(char(31), task_id, input, output, thought, cache_read, cache_write, tokens,
	cost_micros, currency, turns, tree_tokens, tree_cost_micros, tree_currency, context_used, context_size,
	budget_kind, budget_value, budget_currency, budget_noticed, budget_reached, other_costs, tree_other_costs, spend_fault,
	est_tokens, tree_est_tokens, budget_by) FROM task_usage`

const taskUsageFields = 26

// parseTaskUsage cuts one allTaskUsageQuery value; ok is false when it
// does not cut cleanly (then the row is read column by column).
func parseTaskUsage(row string, u *TaskUsage, intern map[string]string) (id string, ok bool) {
	var f [taskUsageFields]string
	for i := range taskUsageFields - 1 {
		j := strings.IndexByte(row, taskRowSep)
		if j < 0 {
			return "", false
		}
		f[i], row = row[:j], row[j+1:]
	}
	if strings.IndexByte(row, taskRowSep) >= 0 {
		return f[0], false
	}
	f[taskUsageFields-1] = row
	ok = true
	num := func(s string) int64 {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			ok = false
		}
		return n
	}
	// The few distinct short texts (currencies, kinds) share one string.
	word := func(s string) string {
		if s == "" {
			return ""
		}
		if w, ok := intern[s]; ok {
			return w
		}
		intern[s] = s
		return s
	}
	*u = TaskUsage{TaskID: f[0], Own: Usage{Input: num(f[1]), Output: num(f[2]), Thought: num(f[3]), CacheRead: num(f[4]),
		CacheWrite: num(f[5]), Tokens: num(f[6]), CostMicros: num(f[7]), Currency: word(f[8])}, Turns: int(num(f[9])),
		TreeTokens: num(f[10]), TreeCost: num(f[11]), TreeCurrency: word(f[12]), ContextUsed: num(f[13]), ContextSize: num(f[14]),
		BudgetKind: word(f[15]), BudgetValue: num(f[16]), BudgetCurrency: word(f[17]), BudgetNoticed: num(f[18]) != 0,
		BudgetReached: num(f[19]) != 0, OtherCosts: f[20], TreeOtherCosts: f[21], SpendFault: f[22],
		EstTokens: num(f[23]), TreeEstTokens: num(f[24]), BudgetBy: word(f[25])}
	return f[0], ok
}

// allTaskUsages reads every row, in one value each, into one slab.
func (q Queries) allTaskUsages(ctx context.Context) (map[string]*TaskUsage, error) {
	var n int
	if err := q.q.QueryRowContext(ctx, `SELECT count(*) FROM task_usage`).Scan(&n); err != nil {
		return nil, fmt.Errorf("read usage: %w", mapErr(err))
	}
	out := make(map[string]*TaskUsage, n)
	if n == 0 {
		return out, nil
	}
	rows, err := q.q.QueryContext(ctx, allTaskUsageQuery)
	if err != nil {
		return nil, fmt.Errorf("read usage: %w", mapErr(err))
	}
	defer rows.Close()
	slab := make([]TaskUsage, 0, n)
	intern := map[string]string{}
	var odd []string
	var row string
	for rows.Next() {
		if err := rows.Scan(&row); err != nil {
			return nil, fmt.Errorf("read usage: %w", mapErr(err))
		}
		if len(slab) == cap(slab) {
			slab = make([]TaskUsage, 0, 1024) // rows written since the count
		}
		slab = slab[:len(slab)+1]
		u := &slab[len(slab)-1]
		id, ok := parseTaskUsage(row, u, intern)
		if !ok {
			slab = slab[:len(slab)-1]
			odd = append(odd, id)
			continue
		}
		out[id] = u
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err)
	}
	if len(odd) > 0 {
		more, err := q.TaskUsages(ctx, odd)
		if err != nil {
			return nil, err
		}
		for id, u := range more {
			out[id] = u
		}
	}
	return out, nil
}

// TaskUsages reads the rows of some tasks (all when ids is nil), by id.
// Only tasks that spent something or have a budget have one.
func (q Queries) TaskUsages(ctx context.Context, ids []string) (map[string]*TaskUsage, error) {
	if ids == nil {
		return q.allTaskUsages(ctx)
	}
	if len(ids) == 0 {
		return map[string]*TaskUsage{}, nil
	}
	query := `SELECT ` + taskUsageColumns + ` FROM task_usage WHERE task_id IN (?` + strings.Repeat(",?", len(ids)-1) + `)`
	args := make([]any, 0, len(ids))
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := q.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("read usage: %w", mapErr(err))
	}
	defer rows.Close()
	out := map[string]*TaskUsage{}
	for rows.Next() {
		u, err := scanTaskUsage(rows)
		if err != nil {
			return nil, fmt.Errorf("read usage: %w", mapErr(err))
		}
		out[u.TaskID] = &u
	}
	return out, mapErr(rows.Err())
}

// SetBudget fixes a task's own budget (kind "" removes it) and its notice
// and reached marks, and clears its spend fault.
func (q Queries) SetBudget(ctx context.Context, id, kind string, value int64, currency, by string, noticed, reached bool) error {
	if _, err := q.q.ExecContext(ctx, `INSERT INTO task_usage (task_id) VALUES (?) ON CONFLICT (task_id) DO NOTHING`, id); err != nil {
		return fmt.Errorf("set budget of %s: %w", id, mapErr(err))
	}
	return q.execOne(ctx, "set budget of "+id, `UPDATE task_usage SET budget_kind = ?, budget_value = ?, budget_currency = ?,
		budget_by = ?, budget_noticed = ?, budget_reached = ?, spend_fault = '' WHERE task_id = ?`, kind, value, currency, by, noticed, reached, id)
}

// SetSpendFault holds a task's tree for a person: why (an implausible
// report, a cost without a rate), kept for the operator. The row is made
// when the task has none.
func (q Queries) SetSpendFault(ctx context.Context, id, why string) error {
	if _, err := q.q.ExecContext(ctx, `INSERT INTO task_usage (task_id) VALUES (?) ON CONFLICT (task_id) DO NOTHING`, id); err != nil {
		return fmt.Errorf("hold spend of %s: %w", id, mapErr(err))
	}
	return q.execOne(ctx, "hold spend of "+id, `UPDATE task_usage SET spend_fault = ? WHERE task_id = ?`, why, id)
}

// SetBudgetMarks records that a task's budget was noticed at 80% or reached.
func (q Queries) SetBudgetMarks(ctx context.Context, id string, noticed, reached bool) error {
	return q.execOne(ctx, "mark budget of "+id, `UPDATE task_usage SET budget_noticed = ?, budget_reached = ? WHERE task_id = ?`,
		noticed, reached, id)
}

// UsageGroup is one group of UsageSince.
type UsageGroup struct {
	Key   string
	Usage Usage
	Turns int
	// EstTokens is how much of Usage.Tokens is an estimate from streamed
	// text (ADR 0077).
	EstTokens int64
}

// UsageSince sums the reports since a time by "task", "profile" or "day"
// (UTC days, the windows of per-day limits: ADR 0077) and by currency, largest token
// count first: one group for each key and currency (reports without a
// cost have currency ""), never a sum across currencies.
func (q Queries) UsageSince(ctx context.Context, since time.Time, by string) ([]UsageGroup, error) {
	key := "task_id"
	switch by {
	case "", "task":
	case "profile":
		key = "profile"
	case "day":
		key = `strftime('%Y-%m-%d', at / 1000000000, 'unixepoch')`
	default:
		return nil, fmt.Errorf("usage by %q: not task, profile or day", by)
	}
	order := "sum(tokens) DESC, k"
	if by == "day" {
		order = "k"
	}
	rows, err := q.q.QueryContext(ctx, `SELECT `+key+` AS k, currency, sum(input), sum(output), sum(thought), sum(cache_read),
		sum(cache_write), sum(tokens), sum(cost_micros), sum(turn),
		sum(CASE WHEN estimate_key != '' THEN tokens ELSE 0 END) FROM usage_turns WHERE at >= ?
		GROUP BY k, currency ORDER BY `+order+`, currency`, nanos(since))
	if err != nil {
		return nil, fmt.Errorf("usage report: %w", mapErr(err))
	}
	defer rows.Close()
	var out []UsageGroup
	for rows.Next() {
		var g UsageGroup
		if err := rows.Scan(&g.Key, &g.Usage.Currency, &g.Usage.Input, &g.Usage.Output, &g.Usage.Thought, &g.Usage.CacheRead,
			&g.Usage.CacheWrite, &g.Usage.Tokens, &g.Usage.CostMicros, &g.Turns, &g.EstTokens); err != nil {
			return nil, fmt.Errorf("usage report: %w", mapErr(err))
		}
		out = append(out, g)
	}
	return out, mapErr(rows.Err())
}
