package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
)

// NewCmdWorktree groups the worktree verbs.
func NewCmdWorktree(f *Factory) *cobra.Command {
	c := group("worktree", "Tasks' git worktrees", "")
	c.AddCommand(NewCmdWorktreePrune(f, nil))
	return c
}

// WorktreePruneOptions are `worktree prune`'s inputs.
type WorktreePruneOptions struct {
	F     *Factory
	Input core.PruneInput
}

// NewCmdWorktreePrune builds `kandev worktree prune`.
func NewCmdWorktreePrune(f *Factory, runF func(*WorktreePruneOptions) error) *cobra.Command {
	opts := &WorktreePruneOptions{F: f}
	c := &cobra.Command{
		Use:   "prune [--dry-run]",
		Short: "Remove worktrees under the kandev home that no task owns",
		Long: `Remove the directories under $KANDEV_HOME/worktrees that no task owns (left by a
create cut short, an interrupted discard, a home restored from a backup), with their
kandev/<id> branches. The worktrees of tasks, stopped, archived or not, are kept.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return worktreePruneRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.Input.DryRun, "dry-run", false, "only list what would be removed")
	return c
}

func worktreePruneRun(ctx context.Context, opts *WorktreePruneOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	res, err := client.PruneWorktrees(ctx, opts.Input)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(res)
	}
	verb := "Removed"
	if opts.Input.DryRun {
		verb = "Would remove"
	}
	for _, d := range res.Removed {
		fmt.Fprintf(f.IO.Out, "%s %s\n", verb, d)
	}
	for _, b := range res.Branches {
		fmt.Fprintf(f.IO.Out, "%s branch %s\n", verb, b)
	}
	if len(res.Removed) == 0 {
		fmt.Fprintln(f.IO.ErrOut, "No orphaned worktrees")
	}
	return nil
}
