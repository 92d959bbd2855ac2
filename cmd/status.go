package cmd

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/daemonclient"
)

// Glance is `kandev status`: what needs the operator and what runs, counted
// over the open tasks.
type Glance struct {
	// Daemon: a daemon answered. Without one the counts are unknown, not 0.
	Daemon  bool `json:"daemon"`
	NeedYou int  `json:"need_you"`
	Running int  `json:"running"`
	// Open counts the tasks neither done nor cancelled (archived ones are
	// not listed at all).
	Open  int          `json:"open"`
	Tasks []GlanceTask `json:"need_you_tasks"`
	// SpentToday is what agents reported spending since local midnight.
	SpentToday *core.Spend `json:"spent_today,omitempty"`
}

// GlanceTask is one task that needs the operator, and why.
type GlanceTask struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Why   string `json:"why"`
}

// needsYou says why the operator must act on t, or "". YourTurn already
// holds the engine's rule (assigned to the operator, a question for them,
// stuck); a task escalated to another person waits on a human too.
func needsYou(t *core.Task) string {
	if t.Status.Terminal() || t.Archived {
		return ""
	}
	switch {
	case t.PendingQuestion != nil && t.PendingQuestion.Kind.ForPerson() && t.PendingQuestion.Status == core.QuestionPending:
		return "question"
	case t.Stuck():
		return "stuck"
	case t.YourTurn && t.Escalated():
		return "escalated"
	case t.YourTurn:
		return "your turn"
	case t.Interrupted:
		return "interrupted"
	case t.Escalated() && t.Assignee != nil && t.Assignee.IsPerson():
		return "escalated to " + t.Assignee.Name
	}
	return ""
}

// glanceRunning: an agent turn is under way or about to be (as the TUI's
// running filter).
func glanceRunning(t *core.Task) bool {
	return t.Session != nil && (t.Session.State == core.SessionRunning || t.Session.State == core.SessionStarting)
}

// add counts one task of the listing. t may be reused afterwards: what
// is kept is copied.
func (g *Glance) add(t *core.Task) {
	if t.Status.Terminal() || t.Archived {
		return
	}
	g.Open++
	// A task waiting on the operator is counted there only, even while
	// its agent sits in the question call: it is not making progress.
	if why := needsYou(t); why != "" {
		g.NeedYou++
		g.Tasks = append(g.Tasks, GlanceTask{ID: strings.Clone(t.ID), Title: strings.Clone(t.Title), Why: why})
	} else if glanceRunning(t) {
		g.Running++
	}
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
		Long: `Count the open tasks that need you (your turn, a question for you, stuck, escalated
to a person, or interrupted by a daemon exit and left for you to start) and those whose agent is running, and list the ones that need you. It never
starts the daemon: without one it says so (--short prints nothing) and exits 0.

--short prints one line for a status bar, e.g. in tmux:
  set -g status-right '#(kandev status --short)'`,
		Example: `  kandev status
  kandev status --short      # 2 need you · 3 running
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
			fmt.Fprintln(f.IO.ErrOut, "No kandev daemon is running for "+home.Dir)
		}
		return nil
	}
	defer client.Close()
	// Counted as the summaries stream in: a status bar asks often, and
	// holding 100,000 tasks to count a few would cost it most of its time.
	g := Glance{Daemon: true, Tasks: []GlanceTask{}}
	if err := scanTasks(ctx, client, core.ListTasksInput{}, nil, func(t *core.Task) error { g.add(t); return nil }); err != nil {
		return err
	}
	if !short {
		y, m, d := time.Now().Date()
		if rep, err := client.Usage(ctx, core.UsageInput{Since: time.Date(y, m, d, 0, 0, 0, 0, time.Local), By: "day"}); err == nil {
			g.SpentToday = &rep.Total
		}
	}
	if f.JSON {
		return f.printJSON(g)
	}
	fmt.Fprintf(f.IO.Out, "%d need you · %d running\n", g.NeedYou, g.Running)
	if short {
		return nil
	}
	if s := g.SpentToday; s != nil && (s.Tokens > 0 || s.Cost > 0) {
		spent := core.FormatTokens(s.Tokens) + " tokens"
		if s.Currency != "" {
			spent = core.FormatCost(s.Cost, s.Currency) + ", " + spent
		}
		fmt.Fprintf(f.IO.Out, "spent today: %s\n", spent)
	}
	tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	for _, t := range g.Tasks {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", t.ID, t.Why, truncate(t.Title, 60))
	}
	return tw.Flush()
}
