package cmd

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// limiter is the client's side of spend limits.
func limiter(client api.Client) (api.Limiter, error) {
	l, ok := client.(api.Limiter)
	if !ok {
		return nil, fmt.Errorf("this client does not know spend limits")
	}
	return l, nil
}

// NewCmdLimit builds `kandev limit`.
func NewCmdLimit(f *Factory) *cobra.Command {
	c := group("limit", "Spend limits per day or week for the home, a profile or a role",
		`A spend limit caps what agents spend in a UTC day or week (from Monday 00:00 UTC), for
the whole home, one profile or one role, beside each tree's budget. When one is reached,
every running turn under it is stopped as a budget stops one, no turn starts under it,
and the task whose report reached it goes to a person (one notification for the
window, reason Budget; kandev wait exits 17). The window rolls by itself: at the next
day's (week's) start, turns start again; the turns the limit cut are dropped, never
delivered again unless you send them. Limits also come from the spend_limits config key;
one set here for the same scope and period wins (docs/usage.md, ADR 0077).`)
	c.AddCommand(NewCmdLimitSet(f, nil), NewCmdLimitList(f, nil), NewCmdLimitRemove(f, nil))
	return c
}

// LimitOptions are `limit set`'s and `limit rm`'s inputs.
type LimitOptions struct {
	F       *Factory
	Profile string
	Role    string
	Input   api.LimitInput
}

// input is the limit named by the flags.
func (o *LimitOptions) input() (api.LimitInput, error) {
	in := o.Input
	switch {
	case o.Profile != "" && o.Role != "":
		return in, usagef("give --profile or --role, not both")
	case o.Profile != "":
		in.Scope, in.Name = core.LimitProfile, o.Profile
	case o.Role != "":
		in.Scope, in.Name = core.LimitRole, o.Role
	default:
		in.Scope = core.LimitHome
	}
	if in.Period != core.PeriodDay && in.Period != core.PeriodWeek {
		return in, usagef("--per: give day or week, got %q", in.Period)
	}
	return in, nil
}

func limitScopeFlags(c *cobra.Command, o *LimitOptions) {
	c.Flags().StringVar(&o.Input.Period, "per", "", "the limit's window: `day` (UTC) or week (from Monday 00:00 UTC)")
	c.Flags().StringVar(&o.Profile, "profile", "", "the limit of one `PROFILE` (default: the whole home)")
	c.Flags().StringVar(&o.Role, "role", "", "the limit of one `ROLE` (default: the whole home)")
	_ = c.RegisterFlagCompletionFunc("per", cobra.FixedCompletions([]string{core.PeriodDay, core.PeriodWeek}, cobra.ShellCompDirectiveNoFileComp))
}

// NewCmdLimitSet builds `kandev limit set`.
func NewCmdLimitSet(f *Factory, runF func(*LimitOptions) error) *cobra.Command {
	opts := &LimitOptions{F: f}
	c := &cobra.Command{
		Use:   "set --per day|week --amount AMOUNT [--profile P | --role R]",
		Short: "Fix a spend limit per day or week",
		Long: `Fix a spend limit: --amount a currency amount (5USD) or tokens (2M-tokens) a window
may spend, for the whole home, a --profile or a --role. Raising a reached limit past
this window's spend lets turns under it start again now (the turns it cut are dropped).
Only a person sets a limit; no agent tool can.`,
		Example: `  kandev limit set --per day --amount 5USD
  kandev limit set --per week --amount 2M-tokens --profile claude
  kandev limit set --per day --amount 1USD --role coder`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if opts.Input.Amount == "" {
				return usagef("--amount is required (5USD, 2M-tokens)")
			}
			if _, err := opts.input(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return limitSetRun(c.Context(), opts)
		},
	}
	limitScopeFlags(c, opts)
	c.Flags().StringVar(&opts.Input.Amount, "amount", "", "what a window may spend: `AMOUNT` (5USD, 2M-tokens)")
	return c
}

func limitSetRun(ctx context.Context, opts *LimitOptions) error {
	f := opts.F
	in, _ := opts.input()
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	lm, err := limiter(client)
	if err != nil {
		return err
	}
	st, err := lm.SetLimit(ctx, in)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(st)
	}
	fmt.Fprintln(f.IO.Out, limitLine(st))
	return nil
}

// NewCmdLimitRemove builds `kandev limit rm`.
func NewCmdLimitRemove(f *Factory, runF func(*LimitOptions) error) *cobra.Command {
	opts := &LimitOptions{F: f}
	c := &cobra.Command{
		Use:     "rm --per day|week [--profile P | --role R]",
		Aliases: []string{"remove"},
		Short:   "Remove a spend limit",
		Long: `Remove a spend limit set with kandev limit set; turns it held start again (the turns it
cut are dropped). A limit of the spend_limits config key is the file's: kandev config set.`,
		Example: `  kandev limit rm --per day
  kandev limit rm --per week --profile claude`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if _, err := opts.input(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return limitRemoveRun(c.Context(), opts)
		},
	}
	limitScopeFlags(c, opts)
	return c
}

func limitRemoveRun(ctx context.Context, opts *LimitOptions) error {
	f := opts.F
	in, _ := opts.input()
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	lm, err := limiter(client)
	if err != nil {
		return err
	}
	st, err := lm.RemoveLimit(ctx, in)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(st)
	}
	fmt.Fprintf(f.IO.Out, "removed %s's %s limit\n", st.Subject(), st.Period)
	return nil
}

// LimitListOptions are `limit list`'s inputs.
type LimitListOptions struct {
	F *Factory
}

// NewCmdLimitList builds `kandev limit list`.
func NewCmdLimitList(f *Factory, runF func(*LimitListOptions) error) *cobra.Command {
	opts := &LimitListOptions{F: f}
	c := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "Every spend limit with what its window spent",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			return limitListRun(c.Context(), opts)
		},
	}
	return c
}

func limitListRun(ctx context.Context, opts *LimitListOptions) error {
	f := opts.F
	client, err := f.ReadClient(ctx)
	if err != nil {
		return err
	}
	lm, err := limiter(client)
	if err != nil {
		return err
	}
	ls, err := lm.Limits(ctx)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(ls)
	}
	if len(ls) == 0 {
		fmt.Fprintln(f.IO.ErrOut, "No spend limits (kandev limit set --per day --amount 5USD).")
		return nil
	}
	tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LIMIT\tPER\tAMOUNT\tSPENT\tWINDOW (UTC)\tSTATE\tSOURCE\t")
	for _, st := range ls {
		state := "ok"
		if st.Reached {
			state = "reached: turns wait until " + st.WindowEnd.UTC().Format("2006-01-02 15:04")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", st.Subject(), st.Period, st.Amount.Format(st.Amount.Value), limitSpent(st),
			st.WindowStart.UTC().Format("2006-01-02 15:04")+" to "+st.WindowEnd.UTC().Format("2006-01-02 15:04"), state, st.Source)
	}
	return tw.Flush()
}

// limitSpent is a window's spend, with any cost that has no rate.
func limitSpent(st api.LimitStatus) string {
	s := st.Amount.Format(st.Spent)
	for _, c := range st.Unpriced {
		s += " and " + core.FormatCost(c.Amount, c.Currency) + " with no rate to " + st.Amount.Currency
	}
	return s
}

// limitLine says a limit in one line.
func limitLine(st api.LimitStatus) string {
	s := fmt.Sprintf("%s's %s limit: %s of %s spent this %s (until %s UTC)", st.Subject(), st.Period, limitSpent(st),
		st.Amount.Format(st.Amount.Value), st.Period, st.WindowEnd.UTC().Format("2006-01-02 15:04"))
	if st.Reached {
		s += "; reached: no turn starts under it until then"
	}
	return s
}
