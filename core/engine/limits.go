package engine

// Spend limits per period (ADR 0077): a day's or a week's cap for the
// whole home, a profile or a role, beside the per-tree budgets. After each
// report the limits over it are summed for their window (UTC) from
// usage_turns; one reached is marked in the store for its window, every
// running turn under it is stopped as a budget stops one, the task whose
// report reached it climbs to a person (one notification for the window,
// whatever it holds), and no turn starts under it until the window rolls
// (the clock's At) or a person raises or removes it.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/store"
)

// limitMark is a limit reached in its window, as the engine holds turns
// by it.
type limitMark struct {
	limit  core.Limit
	end    time.Time
	detail string
	// trigger is the task whose report reached it, the one with a person
	// (no longer under a role's limit by its assignee: it is a person's).
	trigger string
	stop    func() // the roll's timer
}

// limits lists every limit: the ones kandev limit set (the store), then
// the config's spend_limits for keys the store has not.
func (sp *Spend) limits(ctx context.Context) ([]core.Limit, error) {
	rows, err := sp.k.db.SpendLimits(ctx)
	if err != nil {
		return nil, err
	}
	var out []core.Limit
	seen := map[string]bool{}
	for _, r := range rows {
		a := core.Amount{Kind: r.Kind, Value: float64(r.Value), Currency: r.Currency}
		if a.Kind == core.BudgetCost {
			a.Value /= microsPerUnit
		}
		l := core.Limit{Scope: r.Scope, Name: r.Name, Period: r.Period, Amount: a, Source: "cli", SetBy: r.SetBy}
		seen[l.Key()] = true
		out = append(out, l)
	}
	for _, l := range sp.configLimits() {
		if !seen[l.Key()] {
			out = append(out, l)
		}
	}
	return out, nil
}

// configLimits reads spend_limits from the configuration (nil when unset
// or broken: the daemon's start checked it).
func (sp *Spend) configLimits() []core.Limit {
	if sp.k.opts.Config == nil {
		return nil
	}
	cfg, err := sp.k.opts.Config()
	if err != nil {
		return nil
	}
	v, err := cfg.Get("spend_limits")
	if err != nil || v.Value == "" {
		return nil
	}
	ls, err := core.ParseLimits(v.Value)
	if err != nil {
		return nil
	}
	return ls
}

// limitSpent is what a limit's window spent, in its kind.
func (sp *Spend) limitSpent(ctx context.Context, l core.Limit, start, end time.Time) (float64, []core.Cost, error) {
	tokens, costs, err := sp.k.db.LimitSpend(ctx, l.Scope, l.Name, start, end)
	if err != nil {
		return 0, nil, err
	}
	s := core.Spend{Tokens: tokens}
	curs := make([]string, 0, len(costs))
	for c := range costs {
		curs = append(curs, c)
	}
	sort.Strings(curs)
	for _, c := range curs {
		s.AddCost(core.Cost{Amount: float64(costs[c]) / microsPerUnit, Currency: c})
	}
	var rates core.Rates
	if l.Amount.Kind == core.BudgetCost {
		rates = sp.rates()
	}
	spent, unpriced := l.Amount.Spent(s, rates)
	return spent, unpriced, nil
}

// checkLimits compares every limit over a task's report with its window's
// spend (under the budget lock, after checkBudgets).
func (sp *Spend) checkLimits(taskID string) {
	ctx := sp.k.baseCtx
	t, ok := sp.k.cached(taskID)
	if !ok {
		return
	}
	ls, err := sp.limits(ctx)
	if err != nil {
		sp.k.log.Error("read limits", "err", err)
		return
	}
	now := sp.now()
	role := sp.roleOf(taskID)
	for _, l := range ls {
		if !l.Covers(t.Profile, role) {
			continue
		}
		start, end := core.Window(l.Period, now)
		if sp.limitMarked(l.Key(), end) {
			continue
		}
		spent, unpriced, err := sp.limitSpent(ctx, l, start, end)
		if err != nil {
			sp.k.log.Error("limit spend", "limit", l.Key(), "err", err)
			continue
		}
		text := l.Amount.Format(spent)
		if len(unpriced) > 0 {
			var cs []string
			for _, c := range unpriced {
				cs = append(cs, core.FormatCost(c.Amount, c.Currency)+" with no rate to "+l.Amount.Currency)
			}
			text += " and " + strings.Join(cs, " and ")
		} else if spent < l.Amount.Value {
			continue
		}
		sp.limitReached(ctx, l, start, end, core.LimitReason(l, text, end), taskID)
	}
}

// limitMarked says whether the engine holds turns by a limit in the
// window that ends at end.
func (sp *Spend) limitMarked(key string, end time.Time) bool {
	sp.state.mu.Lock()
	defer sp.state.mu.Unlock()
	m, ok := sp.state.limits[key]
	return ok && m.end.Equal(end)
}

// limitReached marks a limit reached for its window (once: a second
// report in the window finds it marked), stops every running turn under
// it, hands the task whose report reached it to a person, and sets the
// roll.
func (sp *Spend) limitReached(ctx context.Context, l core.Limit, start, end time.Time, why, trigger string) {
	first, err := sp.k.db.MarkLimitReached(ctx, l.Key(), start, sp.now(), why, trigger)
	if err != nil {
		sp.k.log.Error("mark limit", "limit", l.Key(), "err", err)
		return
	}
	sp.holdLimit(l, end, why, trigger)
	if !first {
		return
	}
	sp.k.log.Warn("spend limit reached", "limit", l.Key(), "why", why)
	for _, id := range sp.covered(l) {
		sp.budgetStop(ctx, id, "stopped: "+why)
		// A task with work queued shows the limit as why it waits.
		if t, ok := sp.k.cached(id); ok && t.Queued > 0 {
			sp.k.refreshQuiet(id)
		}
	}
	if trigger != "" {
		sp.escalateBudget(ctx, trigger, why)
	}
}

// covered lists the live tasks a limit covers.
func (sp *Spend) covered(l core.Limit) []string {
	cv := sp.k.cache.rlock()
	var ids []string
	for id, t := range cv.tasks {
		if t.Archived || t.Status.Terminal() {
			continue
		}
		role := ""
		if t.Assignee != nil && t.Assignee.IsRole() {
			role = t.Assignee.Name
		}
		if l.Covers(t.Profile, role) {
			ids = append(ids, id)
		}
	}
	cv.runlock()
	sort.Strings(ids)
	return ids
}

// holdLimit holds turns under a limit until end, when the window rolls by
// itself (the clock's At).
func (sp *Spend) holdLimit(l core.Limit, end time.Time, why, trigger string) {
	sp.state.mu.Lock()
	defer sp.state.mu.Unlock()
	if sp.state.limits == nil {
		sp.state.limits = map[string]*limitMark{}
	}
	if m, ok := sp.state.limits[l.Key()]; ok {
		if m.end.Equal(end) {
			return
		}
		m.stop()
	}
	key := l.Key()
	m := &limitMark{limit: l, end: end, detail: why, trigger: trigger}
	m.stop = sp.k.opts.Clock.At(end, func() { sp.limitRolled(key, end) })
	sp.state.limits[key] = m
}

// limitRolled lets turns under a limit start again: its window ended
// (or a person raised or removed it).
func (sp *Spend) limitRolled(key string, end time.Time) {
	if !sp.k.live.unlessClosing(func() { sp.procWG.Add(1) }) {
		return
	}
	defer sp.procWG.Done()
	sp.state.mu.Lock()
	m, ok := sp.state.limits[key]
	if !ok || !m.end.Equal(end) {
		sp.state.mu.Unlock()
		return
	}
	delete(sp.state.limits, key)
	sp.state.mu.Unlock()
	sp.limitResume(m.limit, m.trigger, "the "+m.limit.Period+" rolled over")
}

// limitResume hands back the task a limit climbed on and kicks every task
// under it; the turns it cut are dropped (ADR 0076's default: nothing is
// spent again unless a person says so).
func (sp *Spend) limitResume(l core.Limit, trigger, why string) {
	ctx := sp.k.baseCtx
	ids := sp.covered(l)
	if trigger != "" && !slices.Contains(ids, trigger) {
		ids = append([]string{trigger}, ids...)
	}
	for _, id := range ids {
		t, err := sp.k.storedTask(ctx, id)
		if err != nil {
			continue
		}
		if sp.budgetHold(t) == "" {
			if t.OverBudget() && core.ByLimit(t.Stalled.Detail) {
				sp.handBack(ctx, t, fmt.Sprintf("%s's %s limit lets turns start again (%s); go on where you stopped", l.Subject(), l.Period, why))
			}
			sp.settleCutTurn(ctx, id, api.CutTurnDrop, fmt.Sprintf("the turn %s's %s limit cut was dropped (%s): its message is not delivered again; send it again to go on",
				l.Subject(), l.Period, why))
		}
		// Its waiting reason goes with the hold.
		if t.WaitCause == core.WaitLimit {
			sp.k.refreshQuiet(id)
		}
		sp.k.kickLoop(id)
	}
}

// handBack returns a task a budget or limit sent to a person to whoever
// it was escalated from.
func (sp *Spend) handBack(ctx context.Context, t core.Task, msg string) {
	var from *core.Ref
	if r, ok := t.Stalled.From.AsRef(); ok {
		from = &r
	}
	if from != nil && t.Assignee != nil && *from != *t.Assignee {
		if _, err := sp.handoff(ctx, t, *from, "kandev", msg, nil); err != nil {
			sp.k.log.Error("hand back after limit", "task", t.ID, "err", err)
		}
		return
	}
	now := time.Now().UTC()
	if err := sp.k.commit(ctx, func(tx *store.Tx, c *changes) error {
		c.wake(t.ID)
		return tx.SetStalled(ctx, t.ID, "", now)
	}); err != nil {
		sp.k.log.Error("clear limit stall", "task", t.ID, "err", err)
	}
}

// limitHold says why a reached limit holds t's turns, or "".
func (sp *Spend) limitHold(t core.Task) string {
	sp.state.mu.Lock()
	none := len(sp.state.limits) == 0
	sp.state.mu.Unlock()
	if none {
		return ""
	}
	role := ""
	if t.Assignee != nil && t.Assignee.IsRole() {
		role = t.Assignee.Name
	}
	now := sp.now()
	sp.state.mu.Lock()
	defer sp.state.mu.Unlock()
	for _, m := range sp.state.limits {
		if now.Before(m.end) && m.limit.Covers(t.Profile, role) {
			return m.detail
		}
	}
	return ""
}

// limitWait is a task's waiting reason while a reached limit holds its
// queued work: a role's task, not with a person, with work queued.
func (sp *Spend) limitWait(t core.Task) string {
	if t.Queued == 0 || t.Stalled != nil || t.Assignee == nil || !t.Assignee.IsRole() || t.Archived || t.Status.Terminal() {
		return ""
	}
	return sp.limitHold(t)
}

// loadLimits holds again, at the engine's start, the limits reached in
// their window now: a restart inside the window changes nothing.
func (sp *Spend) loadLimits(ctx context.Context) error {
	ls, err := sp.limits(ctx)
	if err != nil {
		return err
	}
	now := sp.now()
	for _, l := range ls {
		start, end := core.Window(l.Period, now)
		ok, detail, trigger, err := sp.k.db.LimitReached(ctx, l.Key(), start)
		if err != nil {
			return err
		}
		if ok {
			sp.holdLimit(l, end, detail, trigger)
			// The cache was loaded before the hold: a task with work
			// queued shows it as why it waits.
			for _, id := range sp.covered(l) {
				if t, ok := sp.k.cached(id); ok && t.Queued > 0 {
					sp.k.refreshQuiet(id)
				}
			}
		}
	}
	return nil
}

// closeLimits stops the rolls' timers.
func (sp *Spend) closeLimits() {
	sp.state.mu.Lock()
	defer sp.state.mu.Unlock()
	for _, m := range sp.state.limits {
		m.stop()
	}
}

// Limits implements api.Limiter: every limit with this window's spend.
func (sp *Spend) Limits(ctx context.Context) ([]api.LimitStatus, error) {
	ls, err := sp.limits(ctx)
	if err != nil {
		return nil, mapStoreErr(err, "limits")
	}
	out := make([]api.LimitStatus, 0, len(ls))
	for _, l := range ls {
		st, err := sp.limitStatus(ctx, l)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

func (sp *Spend) limitStatus(ctx context.Context, l core.Limit) (api.LimitStatus, error) {
	start, end := core.Window(l.Period, sp.now())
	spent, unpriced, err := sp.limitSpent(ctx, l, start, end)
	if err != nil {
		return api.LimitStatus{}, mapStoreErr(err, "limit "+l.Key())
	}
	ok, detail, _, err := sp.k.db.LimitReached(ctx, l.Key(), start)
	if err != nil {
		return api.LimitStatus{}, mapStoreErr(err, "limit "+l.Key())
	}
	return api.LimitStatus{Limit: l, WindowStart: start, WindowEnd: end, Spent: spent, Unpriced: unpriced, Reached: ok, Detail: detail}, nil
}

// SetLimit implements api.Limiter: a person fixes a limit. One raised
// past its window's spend lets turns under it start again.
func (sp *Spend) SetLimit(ctx context.Context, in api.LimitInput) (api.LimitStatus, error) {
	actor := core.ActorFrom(ctx)
	if err := sp.may(actor, ActSetBudget, core.Task{}); err != nil {
		return api.LimitStatus{}, err
	}
	if err := core.CheckLimitScope(in.Scope, in.Name, in.Period); err != nil {
		return api.LimitStatus{}, err
	}
	a, err := core.ParseAmount(in.Amount)
	if err != nil {
		return api.LimitStatus{}, err
	}
	l := core.Limit{Scope: in.Scope, Name: in.Name, Period: in.Period, Amount: a, Source: "cli", SetBy: actor.String()}
	sp.state.budgetMu.Lock()
	err = sp.k.db.SetSpendLimit(ctx, store.SpendLimit{Scope: l.Scope, Name: l.Name, Period: l.Period, Kind: a.Kind,
		Value: storedAmount(a), Currency: a.Currency, SetBy: l.SetBy, SetAt: sp.now()})
	if err == nil {
		err = sp.k.db.ClearLimitReached(ctx, l.Key())
	}
	sp.state.budgetMu.Unlock()
	if err != nil {
		return api.LimitStatus{}, mapStoreErr(err, "limit "+l.Key())
	}
	sp.liftLimit(l, "raised to "+a.Format(a.Value)+" by "+actor.String())
	// Reached already at the new amount: held again, told once more.
	sp.recheckLimit(l)
	return sp.limitStatus(ctx, l)
}

// RemoveLimit implements api.Limiter: a person removes a limit set with
// kandev limit set (one in the configuration is the file's).
func (sp *Spend) RemoveLimit(ctx context.Context, in api.LimitInput) (api.LimitStatus, error) {
	actor := core.ActorFrom(ctx)
	if err := sp.may(actor, ActSetBudget, core.Task{}); err != nil {
		return api.LimitStatus{}, err
	}
	if err := core.CheckLimitScope(in.Scope, in.Name, in.Period); err != nil {
		return api.LimitStatus{}, err
	}
	l := core.Limit{Scope: in.Scope, Name: in.Name, Period: in.Period}
	sp.state.budgetMu.Lock()
	err := sp.k.db.DeleteSpendLimit(ctx, l.Scope, l.Name, l.Period)
	if err == nil {
		err = sp.k.db.ClearLimitReached(ctx, l.Key())
	}
	sp.state.budgetMu.Unlock()
	if errors.Is(err, store.ErrNotFound) {
		for _, c := range sp.configLimits() {
			if c.Key() == l.Key() {
				return api.LimitStatus{}, core.Errorf(core.CodeValidation, "%s's %s limit is the configuration's (spend_limits): change it with kandev config set spend_limits", l.Subject(), l.Period)
			}
		}
		return api.LimitStatus{}, core.Errorf(core.CodeNotFound, "no %s limit for %s (kandev limit list)", l.Period, l.Subject())
	}
	if err != nil {
		return api.LimitStatus{}, mapStoreErr(err, "limit "+l.Key())
	}
	sp.liftLimit(l, "removed by "+actor.String())
	return api.LimitStatus{Limit: l}, nil
}

// liftLimit lets turns under a limit start again after a person's change.
func (sp *Spend) liftLimit(l core.Limit, why string) {
	sp.state.mu.Lock()
	m, ok := sp.state.limits[l.Key()]
	if ok {
		m.stop()
		delete(sp.state.limits, l.Key())
	}
	sp.state.mu.Unlock()
	if ok {
		sp.limitResume(m.limit, m.trigger, why)
	}
}

// recheckLimit checks one limit against its window's spend now.
func (sp *Spend) recheckLimit(l core.Limit) {
	ctx := sp.k.baseCtx
	start, end := core.Window(l.Period, sp.now())
	spent, unpriced, err := sp.limitSpent(ctx, l, start, end)
	if err != nil || (len(unpriced) == 0 && spent < l.Amount.Value) {
		return
	}
	sp.state.budgetMu.Lock()
	defer sp.state.budgetMu.Unlock()
	sp.limitReached(ctx, l, start, end, core.LimitReason(l, l.Amount.Format(spent), end), "")
}

var _ api.Limiter = (*Spend)(nil)
