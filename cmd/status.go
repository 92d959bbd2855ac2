package cmd

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemonclient"
)

// Glance is `kandev status`: what needs the operator and what runs, counted
// over the open tasks.
type Glance struct {
	// Daemon: a daemon answered. Without one the counts are unknown, not 0.
	Daemon bool `json:"daemon"`
	// NeedYou counts every task that needs a person; Urgent those of them
	// waiting on one (a question, a permission, a stall, an escalation),
	// Review the rest (work handed back to look at).
	NeedYou int `json:"need_you"`
	Urgent  int `json:"urgent"`
	Review  int `json:"review"`
	Running int `json:"running"`
	// Open counts the tasks neither done nor cancelled (archived ones are
	// not listed at all).
	Open int `json:"open"`
	// Tasks lists the tasks that need you, most urgent first (in listing
	// order within an urgency).
	Tasks []GlanceTask `json:"need_you_tasks"`
	// SpentToday is what agents reported spending since UTC midnight: the
	// day a per-day spend limit counts (ADR 0077).
	SpentToday *core.Spend `json:"spent_today,omitempty"`
}

// GlanceTask is one task that needs the operator, and why; Stage is its
// status as shown (core.StageOf: "back" once its agent ran and it came
// back to you).
type GlanceTask struct {
	ID      string       `json:"id"`
	Title   string       `json:"title"`
	Stage   core.Stage   `json:"stage"`
	Why     string       `json:"why"`
	Urgency core.Urgency `json:"urgency"`
}

// add counts one task of the listing. t may be reused afterwards: what
// is kept is copied.
func (g *Glance) add(t *core.Task) {
	if t.Status.Terminal() || t.Archived {
		return
	}
	g.Open++
	if a := t.NeedsYou(); a.Urgency != core.UrgencyNone {
		g.NeedYou++
		if a.Urgency.Urgent() {
			g.Urgent++
		} else {
			g.Review++
		}
		g.Tasks = append(g.Tasks, GlanceTask{ID: strings.Clone(t.ID), Title: strings.Clone(t.Title), Stage: core.StageOf(t), Why: a.Why, Urgency: a.Urgency})
	}
	if t.Running() {
		g.Running++
	}
}

// rank puts the most urgent first; the stable sort keeps the listing's
// order within an urgency.
func (g *Glance) rank() {
	slices.SortStableFunc(g.Tasks, func(a, b GlanceTask) int { return cmp.Compare(b.Urgency, a.Urgency) })
}

// line is the one-line summary, e.g. "1 waiting on you · 4 to review · 3
// running".
func (g *Glance) line() string {
	return fmt.Sprintf("%d waiting on you · %d to review · %d running", g.Urgent, g.Review, g.Running)
}

// StatusOptions are `status`'s inputs.
type StatusOptions struct {
	F     *Factory
	Short bool
}

// NewCmdStatus builds `kandev status`.
func NewCmdStatus(f *Factory, runF func(*StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{F: f}
	c := &cobra.Command{
		Use:   "status [--short]",
		Short: "Count the tasks that need you and the tasks running",
		Long: `Count the open tasks that need you and those whose agent is running, and list the
ones that need you, most urgent first: a permission or a question an agent waits on,
then questions, stuck tasks, escalations and runs a daemon exit cut short ("waiting
on you"), then work handed back to you to look at ("to review"), each with its stage
(◑ back once its agent ran and it came back to you). Finished work (done,
cancelled, archived, its worktree discarded) needs nobody. A task whose agent waits
on your answer counts as waiting on you, not as running. It never starts the daemon:
without one it says so (--short prints nothing) and exits 0.

--short prints one line for a status bar, e.g. in tmux:
  set -g status-right '#(kandev status --short)'`,
		Example: `  kandev status
  kandev status --short      # 1 waiting on you · 4 to review · 3 running
  kandev status --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if opts.Short && f.JSON {
				return usagef("--short and --json cannot be used together")
			}
			if runF != nil {
				return runF(opts)
			}
			return statusRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.Short, "short", false, "one line for a status bar; nothing when the daemon is not running")
	return c
}

func statusRun(ctx context.Context, opts *StatusOptions) error {
	f, short := opts.F, opts.Short
	home, err := f.ResolveHome()
	if err != nil {
		return err
	}
	client, ok := daemonclient.Ping(ctx, home)
	if !ok {
		switch {
		case f.JSON:
			return f.printJSON(Glance{Tasks: []GlanceTask{}})
		case !short:
			fmt.Fprintln(f.IO.ErrOut, "No kandev daemon is running for "+home.Dir+" (start it with: kandev daemon start)")
		}
		return nil
	}
	defer client.Close()
	// Counted as the summaries stream in: a status bar asks often, and
	// holding 100,000 tasks to count a few would cost it most of its time.
	g := Glance{Daemon: true, Tasks: []GlanceTask{}}
	if err := scanTasks(ctx, client, api.ListTasksInput{}, nil, func(t *core.Task) error { g.add(t); return nil }); err != nil {
		return err
	}
	g.rank()
	if !short {
		y, m, d := time.Now().UTC().Date()
		if rep, err := client.Usage(ctx, api.UsageInput{Since: time.Date(y, m, d, 0, 0, 0, 0, time.UTC), By: "day"}); err == nil {
			g.SpentToday = &rep.Total
		}
	}
	if f.JSON {
		return f.printJSON(g)
	}
	fmt.Fprintln(f.IO.Out, g.line())
	if short {
		return nil
	}
	if s := g.SpentToday; s != nil && (s.Tokens > 0 || len(s.Costs()) > 0) {
		spent := s.TokensText()
		if c := s.CostText(); c != "" {
			spent = c + ", " + spent
		}
		fmt.Fprintf(f.IO.Out, "spent today (UTC): %s\n", spent)
	}
	tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	for _, t := range g.Tasks {
		fmt.Fprintf(tw, "%s\t%s %s\t%s\t%s\n", t.ID, t.Stage.Glyph(), t.Stage, t.Why, truncate(t.Title, 60))
	}
	return tw.Flush()
}
