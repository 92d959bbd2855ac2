package cmd

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// spender is the client's side of spend and budgets.
func spender(client api.Client) (api.Spender, error) {
	s, ok := client.(api.Spender)
	if !ok {
		return nil, fmt.Errorf("this client does not report spend")
	}
	return s, nil
}

// UsageOptions are `usage`'s inputs.
type UsageOptions struct {
	F     *Factory
	Since string
	By    string
}

// NewCmdUsage builds `kandev usage`.
func NewCmdUsage(f *Factory, runF func(*UsageOptions) error) *cobra.Command {
	opts := &UsageOptions{F: f}
	c := &cobra.Command{
		Use:   "usage [--since D] [--by task|profile|day]",
		Short: "What agents reported spending: tokens and cost",
		Long: `What the agents reported spending, summed by task, profile or day (UTC days, as per-day limits count them),
largest first. Only what an agent reports is counted: an agent that reports nothing
(docs/usage.md) spends without a trace here.

--since takes a duration back from now (24h, 7d), a date (2026-11-30) or an RFC 3339 time;
default: everything recorded.`,
		Example: `  kandev usage
  kandev usage --since 7d --by day
  kandev usage --by profile --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			switch opts.By {
			case "", "task", "profile", "day":
			default:
				return usagef("--by takes task, profile or day, not %q", opts.By)
			}
			if _, err := parseSince(opts.Since, time.Now()); err != nil {
				return usagef("%v", err)
			}
			if runF != nil {
				return runF(opts)
			}
			return usageRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Since, "since", "", "only spend since `D`: 24h, 7d, 2026-11-30 or an RFC 3339 time")
	c.Flags().StringVar(&opts.By, "by", "task", "group by task, profile or day")
	return c
}

// parseSince reads --since: a duration back from now (with d for days),
// a date (local midnight) or an RFC 3339 time; "" is the beginning.
func parseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		if _, err := fmt.Sscanf(days, "%d", &n); err == nil && n >= 0 && fmt.Sprint(n) == days {
			return now.AddDate(0, 0, -n), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, s, time.Local); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--since %q: give a duration (24h, 7d), a date (2026-11-30) or an RFC 3339 time", s)
}

func usageRun(ctx context.Context, opts *UsageOptions) error {
	f := opts.F
	since, _ := parseSince(opts.Since, time.Now())
	client, err := f.ReadClient(ctx)
	if err != nil {
		return err
	}
	sp, err := spender(client)
	if err != nil {
		return err
	}
	rep, err := sp.Usage(ctx, api.UsageInput{Since: since, By: opts.By})
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(rep)
	}
	if len(rep.Rows) == 0 {
		fmt.Fprintln(f.IO.ErrOut, "No usage recorded"+sinceNote(since)+".")
		return nil
	}
	tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tTOKENS\tINPUT\tOUTPUT\tCOST\tTURNS\t\n", strings.ToUpper(rep.By))
	for _, r := range rep.Rows {
		key := r.Key
		if r.Title != "" {
			key += " " + truncate(r.Title, 40)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t\n", oneLine(key), usageTokensCell(r.Spend), core.FormatTokens(r.Input),
			core.FormatTokens(r.Output), costOrDash(r.Spend), r.Turns)
	}
	fmt.Fprintf(tw, "total\t%s\t%s\t%s\t%s\t%d\t\n", usageTokensCell(rep.Total), core.FormatTokens(rep.Total.Input),
		core.FormatTokens(rep.Total.Output), costOrDash(rep.Total), rep.Turns)
	if err := tw.Flush(); err != nil {
		return err
	}
	if rep.Total.EstimatedTokens > 0 {
		fmt.Fprintf(f.IO.Out, "~ %s tokens are kandev's estimate from streamed text (4 bytes a token), until the agent reports its own\n",
			core.FormatTokens(rep.Total.EstimatedTokens))
	}
	return nil
}

// usageTokensCell is a row's tokens, "~" marking a count with an estimate
// in it.
func usageTokensCell(s core.Spend) string {
	if s.EstimatedTokens > 0 {
		return "~" + core.FormatTokens(s.Tokens)
	}
	return core.FormatTokens(s.Tokens)
}

func sinceNote(since time.Time) string {
	if since.IsZero() {
		return ""
	}
	return " since " + since.Local().Format(time.DateTime)
}

// costOrDash is a spend's costs, each currency apart, or "-".
func costOrDash(s core.Spend) string {
	if c := s.CostText(); c != "" {
		return c
	}
	return "-"
}

// TaskBudgetOptions are `task budget`'s inputs.
type TaskBudgetOptions struct {
	F     *Factory
	ID    string
	Input api.BudgetInput
}

// NewCmdTaskBudget builds `kandev task budget`.
func NewCmdTaskBudget(f *Factory, runF func(*TaskBudgetOptions) error) *cobra.Command {
	opts := &TaskBudgetOptions{F: f}
	c := &cobra.Command{
		Use:   "budget ID [--set AMOUNT | --add AMOUNT] [--cut-turn drop|redeliver|continue]",
		Short: "Show, fix or raise a task's budget",
		Long: `Show, fix or raise a task's budget: a currency amount (5USD, 2.50EUR) or tokens
(2M-tokens, 500k-tokens). The task's subtree shares it; a child may have a smaller one
of its own. At 80% the tree's running agents are told once; at 100% every running turn
in the tree is stopped, none starts, and the task goes to a person (reason Budget).
Raising it past what was spent lets the tree go on; a budget that leaves nothing to
spend is refused. What becomes of each turn the budget cut is --cut-turn's: drop (the
default: its message is not delivered again, nothing is spent unless you say so),
redeliver (its message again, from the start) or continue (a short note telling its
agent to go on where it stopped). Only a person sets a budget; no agent tool can.`,
		Example: `  kandev task budget k3f9qa
  kandev task budget k3f9qa --set 5USD
  kandev task budget k3f9qa --add 2USD
  kandev task budget k3f9qa --add 2USD --cut-turn continue`,
		Args: exactArgs(1, "one task ID"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			if opts.Input.Set != "" && opts.Input.Add != "" {
				return usagef("give --set or --add, not both")
			}
			if opts.Input.CutTurn != "" && opts.Input.Set == "" && opts.Input.Add == "" {
				return usagef("--cut-turn goes with --set or --add")
			}
			if _, err := api.CheckCutTurn(opts.Input.CutTurn); err != nil {
				return usagef("--cut-turn: %s", strings.TrimPrefix(err.Error(), "VALIDATION_ERROR: "))
			}
			if runF != nil {
				return runF(opts)
			}
			return taskBudgetRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Input.Set, "set", "", "fix the task's own budget to `AMOUNT` (5USD, 2M-tokens)")
	c.Flags().StringVar(&opts.Input.Add, "add", "", "raise the task's own budget by `AMOUNT` of the same kind")
	c.Flags().StringVar(&opts.Input.CutTurn, "cut-turn", "", "what becomes of the turns a reached budget cut, when this lets the tree go on: `drop` (default), redeliver or continue")
	_ = c.RegisterFlagCompletionFunc("cut-turn", cobra.FixedCompletions([]string{api.CutTurnDrop, api.CutTurnRedeliver, api.CutTurnContinue}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

func taskBudgetRun(ctx context.Context, opts *TaskBudgetOptions) error {
	f := opts.F
	connect := f.ReadClient // showing the budget only reads
	if opts.Input.Set != "" || opts.Input.Add != "" {
		connect = f.Client
	}
	client, err := connect(ctx)
	if err != nil {
		return err
	}
	var t core.Task
	if opts.Input.Set == "" && opts.Input.Add == "" {
		t, err = client.GetTask(ctx, opts.ID)
	} else {
		sp, serr := spender(client)
		if serr != nil {
			return serr
		}
		// Held before: the change may let the tree go on, and what
		// becomes of its cut turns is said.
		before, berr := client.GetTask(ctx, opts.ID)
		held := berr == nil && before.Budget != nil && before.Budget.Reached
		t, err = sp.SetBudget(ctx, opts.ID, opts.Input)
		if err == nil && held && !f.JSON {
			cut, _ := api.CheckCutTurn(opts.Input.CutTurn)
			fmt.Fprintln(f.IO.ErrOut, cutTurnNote(cut))
		}
	}
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(t)
	}
	if t.Budget == nil {
		fmt.Fprintf(f.IO.Out, "%s: no budget (set one with --set AMOUNT)\n", t.ID)
		return nil
	}
	fmt.Fprintln(f.IO.Out, budgetLine(t))
	return nil
}

// cutTurnNote says what became of the turns a reached budget cut.
func cutTurnNote(cut string) string {
	switch cut {
	case api.CutTurnRedeliver:
		return "The turns the budget cut are delivered again, from the start (--cut-turn redeliver)."
	case api.CutTurnContinue:
		return "The agents whose turns the budget cut are told to go on where they stopped (--cut-turn continue)."
	}
	return "The turns the budget cut were dropped: their messages are not delivered again (--cut-turn redeliver or continue to have them go on)."
}

// budgetLine says a task's budget in one line.
func budgetLine(t core.Task) string {
	b := t.Budget
	s := fmt.Sprintf("%s of %s spent, %s left", b.Amount.Format(b.Spent), b.Amount.Format(b.Amount.Value), b.Amount.Format(b.Remaining))
	if b.Holder != t.ID {
		s += " (the budget of task " + b.Holder + ", shared by its subtree)"
	}
	for _, c := range b.Unpriced {
		s += "; and " + core.FormatCost(c.Amount, c.Currency) + " with no rate to " + b.Amount.Currency
	}
	switch {
	case b.Fault != "":
		s += "; held: " + b.Fault
	case b.Reached:
		s += "; reached: the tree is stopped until it is raised"
	}
	if b.Amount.Kind == "" {
		s = "none; held: " + b.Fault + " (give the tree a budget to go on: kandev task budget " + b.Holder + " --set AMOUNT)"
	}
	return s
}
