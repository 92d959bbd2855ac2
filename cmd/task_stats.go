package cmd

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// TaskStatsOptions are `task stats`'s inputs.
type TaskStatsOptions struct {
	F     *Factory
	Input api.ListTasksInput
}

// NewCmdTaskStats builds `kandev task stats`.
func NewCmdTaskStats(f *Factory, runF func(*TaskStatsOptions) error) *cobra.Command {
	opts := &TaskStatsOptions{F: f}
	c := &cobra.Command{
		Use:   "stats [--all] [--root ID]",
		Short: "Count the tasks: by status, sandbox and host, running, waiting, spend",
		Long: `Count the tasks that are not archived (with --all, every task; with --root, only that
task and its subtree): by status, by sandbox and by host, how many agents run now, how
many tasks wait on a question or on you, how many stalled, how many messages are queued,
and what their agents reported spending (each task's own spend once). The daemon counts
from what it holds in memory, so this is cheap however many tasks there are.`,
		Example: `  kandev task stats
  kandev task stats --root a1b2c3 --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return taskStatsRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.Input.All, "all", false, "count archived tasks too")
	c.Flags().StringVar(&opts.Input.Root, "root", "", "count only this task and its subtree")
	return c
}

func taskStatsRun(ctx context.Context, opts *TaskStatsOptions) error {
	f := opts.F
	client, err := f.ReadClient(ctx)
	if err != nil {
		return err
	}
	st, err := client.TaskStats(ctx, opts.Input)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(st)
	}
	return writeTaskStats(f.IO.Out, st)
}

// writeTaskStats prints the counts as a few labelled lines; a breakdown
// lists its keys in a stable order (statuses in workflow order).
func writeTaskStats(w io.Writer, st api.TaskStats) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "tasks\t%d\n", st.Tasks)
	var statuses []string
	for _, s := range core.Statuses {
		if n := st.ByStatus[s]; n > 0 {
			statuses = append(statuses, fmt.Sprintf("%s %d", s, n))
		}
	}
	fmt.Fprintf(tw, "status\t%s\n", joinOrDash(statuses))
	fmt.Fprintf(tw, "sandbox\t%s\n", joinOrDash(counts(st.BySandbox)))
	fmt.Fprintf(tw, "host\t%s\n", joinOrDash(counts(st.ByHost)))
	fmt.Fprintf(tw, "running\t%d\n", st.Running)
	fmt.Fprintf(tw, "questions\t%d pending\n", st.PendingQuestions)
	fmt.Fprintf(tw, "your turn\t%d\n", st.YourTurn)
	fmt.Fprintf(tw, "stalled\t%d\n", st.Stalled)
	fmt.Fprintf(tw, "queued\t%d messages\n", st.Queued)
	fmt.Fprintf(tw, "spend\t%s tokens, %s\n", core.FormatTokens(st.Spend.Tokens), costOrDash(st.Spend))
	return tw.Flush()
}

// counts writes a breakdown as "key n" pairs, keys sorted ("-" for none).
func counts(m map[string]int) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		name := k
		if name == "" {
			name = "-"
		}
		out = append(out, fmt.Sprintf("%s %d", oneLine(name), m[k]))
	}
	return out
}

func joinOrDash(parts []string) string {
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}
