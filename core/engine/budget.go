package engine

// Budgets (rule 6, ADR 0051): a person fixes or raises a task's budget;
// its subtree shares it. At 80% the subtree's running agents are told
// once; at 100% every running turn in it is stopped (halt only: sessions
// cancelled, worktrees and queues kept, a cut turn's prompt queued again),
// no turn starts in it, and the holder goes to a person with the reason
// Budget. Raising the budget hands the holder back and the tree goes on.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/prompt"
	"github.com/kandev/kandev/store"
)

// noticeAt is the share of a budget at which the tree is warned.
const noticeAt = 0.8

// itemBudget is the queue kind of the 80% notice.
const itemBudget = "budget"

// checkBudgetsAsync checks the budgets over a task off the caller's
// goroutine: it runs from an agent's notification handler, which stopping
// that agent's turn must not wait on.
func (sp *Spend) checkBudgetsAsync(taskID string) {
	if !sp.k.live.unlessClosing(func() { sp.procWG.Add(1) }) {
		return
	}
	go func() {
		defer sp.procWG.Done()
		sp.checkBudgets(taskID)
		sp.state.budgetMu.Lock()
		defer sp.state.budgetMu.Unlock()
		sp.checkLimits(taskID)
	}()
}

// checkBudgets compares every budget on the task or above it with its
// subtree's spend, from the store, under the budget lock. A cost in
// another currency than a budget's counts converted with the rates a
// person set; without a rate nothing says how much of the budget it is,
// and the tree is held for a person (fail closed, ADR 0075).
func (sp *Spend) checkBudgets(taskID string) {
	ctx := sp.k.baseCtx
	sp.state.budgetMu.Lock()
	defer sp.state.budgetMu.Unlock()
	var rates core.Rates
	ratesRead := false
	for _, id := range append([]string{taskID}, sp.ancestors(taskID)...) {
		row, ok, err := sp.k.db.TaskUsage(ctx, id)
		if err != nil {
			sp.k.log.Error("read budget", "task", id, "err", err)
			continue
		}
		if !ok || row.BudgetKind == "" || row.BudgetReached || row.SpendFault != "" {
			continue
		}
		usage, b := usageFromStore(&row)
		if len(b.Unpriced) > 0 {
			if !ratesRead {
				rates, ratesRead = sp.rates(), true
			}
			b.Spent, b.Unpriced = b.Amount.Spent(usage.Tree, rates)
		}
		if len(b.Unpriced) > 0 {
			sp.budgetReached(ctx, id, b, unpricedFault(id, b))
			continue
		}
		frac := b.Spent / b.Amount.Value
		switch {
		case frac >= 1:
			sp.budgetReached(ctx, id, b, "")
		case frac >= noticeAt && !row.BudgetNoticed:
			sp.budgetNotice(ctx, id, b)
		}
	}
}

// implausibleAsync holds a task's whole tree for a person for a report
// kandev will not count (what says it, raw), off the caller's goroutine
// (an agent's notification handler: stopping its turn must not wait on
// it). The hold is on the tree's top task: with a budget, as a reached
// one; without, by the fault alone. A person's budget change (task budget
// ROOT --set AMOUNT) clears it.
func (sp *Spend) implausibleAsync(taskID, raw string) {
	if !sp.k.live.unlessClosing(func() { sp.procWG.Add(1) }) {
		return
	}
	go func() {
		defer sp.procWG.Done()
		ctx := sp.k.baseCtx
		sp.state.budgetMu.Lock()
		defer sp.state.budgetMu.Unlock()
		top := taskID
		if anc := sp.ancestors(taskID); len(anc) > 0 {
			top = anc[len(anc)-1]
		}
		row, _, err := sp.k.db.TaskUsage(ctx, top)
		if err != nil {
			sp.k.log.Error("read budget", "task", top, "err", err)
		}
		if row.SpendFault != "" {
			return // held already: the first fault is the one a person reads
		}
		row.TaskID = top
		_, b := usageFromStore(&row)
		why := fmt.Sprintf("task %s's agent reported %s: implausible, not counted; the tree of task %s is held for a person "+
			"(kandev task budget %s --set AMOUNT to go on)", taskID, raw, top, top)
		sp.k.log.Warn("implausible usage report", "task", taskID, "raw", raw)
		sp.budgetReached(ctx, top, b, why)
	}()
}

// unpricedFault says why a budget cannot count its tree's spend: costs in
// a currency with no rate to its own, and how a person sets one.
func unpricedFault(holder string, b *core.BudgetInfo) string {
	var costs, hints []string
	for _, c := range b.Unpriced {
		costs = append(costs, core.FormatCost(c.Amount, c.Currency))
		hints = append(hints, core.RateHint(c.Currency, b.Amount.Currency))
	}
	return fmt.Sprintf("the tree of task %s reported a cost of %s, but its budget is in %s and no rate from %s to %s is set: "+
		"set one with `%s`, then `kandev task budget %s --set %s` to go on (spent so far in %s: %s)",
		holder, strings.Join(costs, " and "), b.Amount.Currency, b.Unpriced[0].Currency, b.Amount.Currency,
		strings.Join(hints, "` and `"), holder, b.Amount.String(), b.Amount.Currency, b.Amount.Format(b.Spent))
}

// budgetNotice warns every running agent in the holder's subtree, once.
func (sp *Spend) budgetNotice(ctx context.Context, holder string, b *core.BudgetInfo) {
	h, _ := sp.k.cached(holder)
	pct := int(math.Floor(100 * b.Spent / b.Amount.Value))
	now := time.Now().UTC()
	// Read before the transaction: a task's lock is never taken while the
	// store's write lock is held (a stop takes them the other way round).
	var running []string
	for _, id := range sp.subtree(holder) {
		if sp.hasRun(id) {
			running = append(running, id)
		}
	}
	err := sp.k.commit(ctx, func(tx *store.Tx, c *changes) error {
		if err := tx.SetBudgetMarks(ctx, holder, true, false); err != nil {
			return err
		}
		c.touch(holder)
		for _, id := range running {
			data := prompt.Budget{HolderID: holder, HolderTitle: h.Title, Own: id == holder, Spent: b.Amount.Format(b.Spent),
				Amount: b.Amount.Format(b.Amount.Value), Percent: pct}
			if _, err := tx.Enqueue(ctx, noticeItem(store.QueueItem{TaskID: id, Priority: priorityFront, Kind: itemBudget,
				Sender: "kandev", Text: fmt.Sprintf("budget %d%% spent", pct), CreatedAt: now}, prompt.NoticeBudget, data,
				map[string]any{"holder_task_id": holder})); err != nil {
				return err
			}
			c.wake(id)
		}
		return c.noteTx(ctx, tx, holder, core.MsgStatus, "kandev",
			fmt.Sprintf("budget: the tree spent %s of %s (%d%%); its running agents were told to wrap up",
				b.Amount.Format(b.Spent), b.Amount.Format(b.Amount.Value), pct), map[string]any{"reason": core.StallBudget})
	})
	if err != nil {
		sp.k.log.Error("budget notice", "task", holder, "err", err)
	}
}

// hasRun says whether a task has a live agent run.
func (sp *Spend) hasRun(id string) bool {
	rt := sp.k.live.runtime(id)
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.run != nil
}

// budgetReached stops the holder's tree and hands the holder to a person:
// its budget was spent, or (fault not "") the tree holds for a person for
// what the fault says, kept on the holder.
func (sp *Spend) budgetReached(ctx context.Context, holder string, b *core.BudgetInfo, fault string) {
	figures := fault
	if fault == "" {
		figures = fmt.Sprintf("the tree of task %s spent %s of its %s budget", holder, b.Amount.Format(b.Spent), b.Amount.Format(b.Amount.Value))
	}
	if err := sp.k.commit(ctx, func(tx *store.Tx, c *changes) error {
		c.touch(holder)
		if fault != "" {
			if err := tx.SetSpendFault(ctx, holder, truncateRunes(fault, 2000)); err != nil {
				return err
			}
		}
		if b == nil || b.Amount.Kind == "" {
			return nil
		}
		return tx.SetBudgetMarks(ctx, holder, true, true)
	}); err != nil {
		sp.k.log.Error("mark budget reached", "task", holder, "err", err)
		return
	}
	// Marked first: from here on no turn starts in the tree (held), then
	// the turns running are stopped.
	for _, id := range sp.subtree(holder) {
		sp.budgetStop(ctx, id, "stopped: "+figures)
	}
	sp.escalateBudget(ctx, holder, figures)
}

// budgetStop stops a task's running turn as a stop does (halt only), but
// holds the task by its tree's budget rather than by the halted mark, and
// queues the cut turn's prompt again, so a raised budget goes on from it.
func (sp *Spend) budgetStop(ctx context.Context, id, why string) {
	rt := sp.k.live.runtime(id)
	rt.mu.Lock()
	live := rt.run != nil || (rt.busy && rt.loopFence == rt.fence)
	if !live {
		rt.mu.Unlock()
		return
	}
	rt.fence++
	run := rt.run
	if run != nil {
		run.stopped.Store(true)
		sp.releaseRunLocked(run)
	}
	c, err := sp.k.tx(ctx, func(tx *store.Tx, c *changes) error {
		now := time.Now().UTC()
		c.touch(id)
		var sessions []string
		if run != nil {
			sessions = append(sessions, run.sessionID)
			if err := sp.budgetRequeueTx(ctx, tx, id, run.sessionID); err != nil {
				return err
			}
			st := string(core.SessionCancelled)
			if err := tx.UpdateSession(ctx, run.sessionID, store.SessionUpdate{State: &st, Error: &why}, now); err != nil {
				return err
			}
			if err := tx.RevokeSessionTokens(ctx, run.sessionID, now); err != nil {
				return err
			}
			c.session(run.sessionID)
		}
		if err := sp.staleQuestionTx(ctx, tx, id, "the tree reached its budget", c); err != nil {
			return err
		}
		return c.noteTx(ctx, tx, id, core.MsgStatus, "kandev", why, map[string]any{"reason": core.StallBudget, "sessions": sessions})
	})
	if run != nil {
		sp.terminate(run)
	}
	rt.mu.Unlock()
	if err != nil {
		sp.k.log.Error("record budget stop", "task", id, "err", err)
		sp.k.refreshQuiet(id)
		return
	}
	sp.k.announce(c)
}

// budgetRequeueTx queues the prompt of a turn a reached budget cut again,
// at the front, as a notice that says why it comes again. Like a
// redelivery (requeueOpenPrompt) it carries the prompt's seq, so it is
// never queued twice.
func (sp *Spend) budgetRequeueTx(ctx context.Context, tx *store.Tx, taskID, sessionID string) error {
	last, ok, err := openPrompt(ctx, tx.Queries, taskID, sessionID)
	if !ok {
		return err
	}
	_, err = tx.Enqueue(ctx, noticeItem(store.QueueItem{TaskID: taskID, Priority: priorityFront, Kind: itemRedeliver,
		Sender: last.Author, Text: last.Text, CreatedAt: time.Now().UTC()}, prompt.NoticeBudgetResume,
		prompt.Message{From: sp.describeSender(last.Author), Text: last.Text}, map[string]any{"original_seq": last.Seq, "reason": core.StallBudget}))
	return err
}

// escalateBudget hands the holder to a person with the reason Budget: to
// the person who handed it over, else its creator if a person, else the
// person who set the budget. A holder already with a person stays there,
// marked. With nobody to go to it stays, marked, held by the budget.
func (sp *Spend) escalateBudget(ctx context.Context, holder, figures string) {
	t, err := sp.k.storedTask(ctx, holder)
	if err != nil {
		sp.k.log.Error("escalate budget", "task", holder, "err", err)
		return
	}
	if t.Archived || t.Status.Terminal() {
		return
	}
	var target *core.Ref
	switch {
	case t.Assignee != nil && t.Assignee.IsPerson():
	case t.HandedBy != nil && t.HandedBy.IsPerson():
		target = t.HandedBy
	default:
		if t.CreatedBy.IsPerson() {
			target = &t.CreatedBy.Ref
		} else if t.Budget != nil {
			if r := t.Budget.SetBy.Ref; r.IsPerson() {
				target = &r
			}
		}
	}
	if target != nil && t.Assignee != nil {
		hander := "kandev"
		if t.Assignee.IsRole() {
			hander = roleRef(t.Assignee.Name)
		}
		if _, err := sp.handoff(ctx, t, *target, hander, figures, &core.Stall{Reason: core.StallBudget, Cause: core.CauseBudget}); err != nil {
			sp.k.log.Error("escalate budget", "task", holder, "to", target.String(), "err", err)
		}
		return
	}
	from := ""
	if t.Assignee != nil {
		from = t.Assignee.String()
	}
	now := time.Now().UTC()
	stalled := stallJSON(core.Stall{Reason: core.StallBudget, From: core.ParseBy(from), Detail: truncateRunes(figures, 2000), At: now, Cause: core.CauseBudget})
	if err := sp.k.commit(ctx, func(tx *store.Tx, c *changes) error {
		c.touch(holder)
		return tx.SetStalled(ctx, holder, stalled, now)
	}); err != nil {
		sp.k.log.Error("mark budget stall", "task", holder, "err", err)
	}
}

// budgetHold names the task whose reached budget holds t, or "".
func (sp *Spend) budgetHold(t core.Task) string {
	if t.Budget != nil && t.Budget.Holder == t.ID && t.Budget.Reached {
		return t.ID
	}
	cv := sp.k.cache.rlock()
	defer cv.runlock()
	seen := map[string]bool{t.ID: true}
	for p := t.ParentID; p != "" && !seen[p]; {
		seen[p] = true
		a := cv.tasks[p]
		if a == nil {
			break
		}
		if a.Budget != nil && a.Budget.Reached {
			return a.ID
		}
		p = a.ParentID
	}
	return ""
}

// governingBudget is the budget shown on a task: the first reached on it
// or above it, else the one with the least left in its own terms.
func (sp *Spend) governingBudget(t core.Task) *core.BudgetInfo {
	best := t.Budget
	var bestTree *core.Spend
	if t.Usage != nil {
		bestTree = &t.Usage.Tree
	}
	cv := sp.k.cache.rlock()
	seen := map[string]bool{t.ID: true}
	left := func(b *core.BudgetInfo) float64 {
		if b.Amount.Value <= 0 {
			return 0
		}
		return b.Remaining / b.Amount.Value
	}
	for p := t.ParentID; p != "" && !seen[p]; {
		seen[p] = true
		a := cv.tasks[p]
		if a == nil {
			break
		}
		if b := a.Budget; b != nil {
			if best == nil || (b.Reached && !best.Reached) || (!best.Reached && left(b) < left(best)) {
				best = b
				bestTree = nil
				if a.Usage != nil {
					tree := a.Usage.Tree
					bestTree = &tree
				}
			}
		}
		p = a.ParentID
	}
	cv.runlock()
	return sp.priced(best, bestTree)
}

// SetBudget implements api.Spender: a person fixes or raises a task's own
// budget. Raising a reached budget past the spend hands the holder back
// where it was and lets the tree go on; a raise that leaves nothing to
// spend is refused.
func (sp *Spend) SetBudget(ctx context.Context, ref string, in api.BudgetInput) (core.Task, error) {
	actor := core.ActorFrom(ctx)
	if err := sp.may(actor, ActSetBudget, core.Task{}); err != nil {
		return core.Task{}, err
	}
	t, err := sp.task(ctx, ref)
	if err != nil {
		return core.Task{}, err
	}
	sp.state.budgetMu.Lock()
	row, _, err := sp.k.db.TaskUsage(ctx, t.ID)
	if err != nil {
		sp.state.budgetMu.Unlock()
		return core.Task{}, mapStoreErr(err, "budget of "+t.ID)
	}
	usage, cur := usageFromStore(&row)
	var curAmount *core.Amount
	if cur != nil && cur.Amount.Kind != "" {
		curAmount = &cur.Amount
	}
	a, err := api.CheckBudgetChange(curAmount, in)
	if err != nil {
		sp.state.budgetMu.Unlock()
		return core.Task{}, err
	}
	cutTurn, err := api.CheckCutTurn(in.CutTurn)
	if err != nil {
		sp.state.budgetMu.Unlock()
		return core.Task{}, err
	}
	row.BudgetKind, row.BudgetCurrency = a.Kind, a.Currency
	row.BudgetValue = storedAmount(a)
	_, next := usageFromStore(&row)
	if usage != nil {
		next = sp.priced(next, &usage.Tree)
	}
	if len(next.Unpriced) > 0 {
		sp.state.budgetMu.Unlock()
		return core.Task{}, core.Errorf(core.CodeValidation, "%s", unpricedFault(t.ID, next))
	}
	// A budget that leaves nothing to spend is refused, reached or not
	// (docs/usage.md): to stop a tree now is task stop's.
	if next.Spent >= a.Value {
		sp.state.budgetMu.Unlock()
		return core.Task{}, core.Errorf(core.CodeValidation, "the tree of task %s has spent %s; a budget of %s leaves nothing to spend: give more than that "+
			"(to stop the tree now: kandev task stop)", t.ID, a.Format(next.Spent), a.Format(a.Value))
	}
	if hold := sp.budgetHold(t); hold != "" && hold != t.ID {
		sp.state.budgetMu.Unlock()
		return core.Task{}, core.Errorf(core.CodeValidation, "task %s is in the tree of task %s, whose budget is reached: a budget of %s on %s leaves nothing to spend "+
			"while that one holds it; raise that one: kandev task budget %s --add AMOUNT", t.ID, hold, a.Format(a.Value), t.ID, hold)
	}
	wasReached := cur != nil && cur.Reached
	err = sp.k.commit(ctx, func(tx *store.Tx, c *changes) error {
		c.touch(t.ID)
		if err := tx.SetBudget(ctx, t.ID, a.Kind, row.BudgetValue, a.Currency, actor.String(), false, false); err != nil {
			return err
		}
		return c.noteTx(ctx, tx, t.ID, core.MsgStatus, actor.String(), fmt.Sprintf("budget set to %s by %s (spent so far: %s)",
			a.Format(a.Value), actor.String(), a.Format(next.Spent)), map[string]any{"budget": a})
	})
	sp.state.budgetMu.Unlock()
	if err != nil {
		return core.Task{}, mapStoreErr(err, "budget of "+t.ID)
	}
	if wasReached {
		sp.budgetResume(ctx, t.ID, a, cutTurn)
	}
	// The new budget may be spent most of already, or all of it.
	sp.checkBudgets(t.ID)
	return sp.getTask(ctx, t.ID)
}

// budgetResume lets a tree go on after its budget was raised: the holder
// goes back to whoever it was escalated from, the turns the budget cut
// become what cutTurn says (ADR 0076), and every task in the tree with
// work queued is kicked.
func (sp *Spend) budgetResume(ctx context.Context, holder string, a core.Amount, cutTurn string) {
	t, err := sp.k.storedTask(ctx, holder)
	if err == nil && t.OverBudget() {
		var from *core.Ref
		if r, ok := t.Stalled.From.AsRef(); ok {
			from = &r
		}
		msg := "the budget was raised to " + a.Format(a.Value) + "; go on where you stopped"
		switch {
		case from != nil && t.Assignee != nil && *from != *t.Assignee:
			if _, err := sp.handoff(ctx, t, *from, core.ActorFrom(ctx).String(), msg, nil); err != nil {
				sp.k.log.Error("hand back after budget", "task", holder, "err", err)
			}
		default:
			now := time.Now().UTC()
			if err := sp.k.commit(ctx, func(tx *store.Tx, c *changes) error {
				c.wake(holder)
				return tx.SetStalled(ctx, holder, "", now)
			}); err != nil {
				sp.k.log.Error("clear budget stall", "task", holder, "err", err)
			}
		}
	}
	for _, id := range sp.subtree(holder) {
		sp.settleCutTurn(ctx, id, cutTurn, "")
		sp.k.kickLoop(id)
	}
}

// settleCutTurn makes a task's queued cut turn (the prompt a reached
// budget queued again) what a person chose when raising it: delivered
// again as it is (redeliver), replaced by a short note to go on
// (continue), or withdrawn (drop), with a note in the conversation.
// dropped, when not "", is that note for a drop (a limit's roll says its
// own).
func (sp *Spend) settleCutTurn(ctx context.Context, id, cutTurn, dropped string) {
	if cutTurn == api.CutTurnRedeliver {
		return
	}
	err := sp.k.commit(ctx, func(tx *store.Tx, c *changes) error {
		items, err := tx.Queue(ctx, id)
		if err != nil {
			return err
		}
		for _, it := range items {
			d, ok := queuedNotice(it)
			if !ok || d.Notice != prompt.NoticeBudgetResume {
				continue
			}
			if err := tx.DeleteQueueItem(ctx, it.ID); err != nil {
				return err
			}
			c.touch(id)
			why := "the turn the budget cut was dropped (task budget --cut-turn drop): its message is not delivered again"
			if dropped != "" {
				why = dropped
			}
			if cutTurn == api.CutTurnContinue {
				var msg prompt.Message
				_ = json.Unmarshal(d.Data, &msg)
				var meta map[string]any
				_ = json.Unmarshal([]byte(it.Meta), &meta)
				delete(meta, "notice")
				delete(meta, "data")
				next := it
				next.ID, next.Text = 0, "go on where you stopped (the budget was raised)"
				if _, err := tx.Enqueue(ctx, noticeItem(next, prompt.NoticeBudgetContinue, prompt.Message{From: msg.From}, meta)); err != nil {
					return err
				}
				c.wake(id)
				why = "the turn the budget cut goes on (task budget --cut-turn continue): its agent is told to go on where it stopped, without its message again"
			}
			if err := c.noteTx(ctx, tx, id, core.MsgStatus, core.ActorFrom(ctx).String(), why,
				map[string]any{"reason": core.StallBudget, "cut_turn": cutTurn}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		sp.k.log.Error("settle cut turn", "task", id, "err", err)
	}
}

// storedAmount is an amount as task_usage keeps it.
func storedAmount(a core.Amount) int64 {
	if a.Kind == core.BudgetCost {
		return int64(math.Round(a.Value * microsPerUnit))
	}
	return int64(a.Value)
}

// createBudget is the budget a new task starts with: the one given (a
// person's only), else for a top-level autopilot task the configured
// autopilot_budget. nil: none.
func (sp *Spend) createBudget(actor core.Actor, in api.CreateTaskInput) (*core.Amount, string, error) {
	if in.Budget != "" {
		if err := sp.may(actor, ActSetBudget, core.Task{}); err != nil {
			return nil, "", err
		}
		a, err := core.ParseAmount(in.Budget)
		if err != nil {
			return nil, "", err
		}
		return &a, actor.String(), nil
	}
	if !in.Autopilot || in.ParentID != "" || sp.k.opts.Config == nil {
		return nil, "", nil
	}
	cfg, err := sp.k.opts.Config()
	if err != nil {
		return nil, "", nil // the daemon's start checked it; a broken file now changes nothing here
	}
	v, err := cfg.Get("autopilot_budget")
	if err != nil || v.Value == "" {
		return nil, "", nil
	}
	a, err := core.ParseAmount(v.Value)
	if err != nil {
		return nil, "", core.Errorf(core.CodeValidation, "config autopilot_budget: %v", err)
	}
	return &a, "config", nil
}

// setCreateBudgetTx records a new task's budget with its row.
func setCreateBudgetTx(ctx context.Context, tx *store.Tx, id string, a *core.Amount, by string) error {
	if a == nil {
		return nil
	}
	return tx.SetBudget(ctx, id, a.Kind, storedAmount(*a), a.Currency, by, false, false)
}
