package cmd

import (
	"context"
	"fmt"

	"github.com/kandev/kandev/core/api"
	"github.com/spf13/cobra"
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
	Input api.PruneInput
}

// NewCmdWorktreePrune builds `kandev worktree prune`.
func NewCmdWorktreePrune(f *Factory, runF func(*WorktreePruneOptions) error) *cobra.Command {
	opts := &WorktreePruneOptions{F: f}
	c := &cobra.Command{
		Use:   "prune [--dry-run] [--force DIR|BRANCH]...",
		Short: "Remove worktrees under the kandev home that no task owns",
		Long: `Remove the directories under $KANDEV_HOME/worktrees that no task owns (left by a
create cut short, an interrupted discard), with their kandev/<id> branches. The worktrees
of tasks, stopped, archived or not, are kept. Prune refuses when the store records a
worktree outside this home (a home moved or reached by another path).

Kept unless --force names them: a worktree with uncommitted changes, a branch with
commits no other branch has, a directory that is not a git worktree. --dry-run says
what would go and why.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return worktreePruneRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.Input.DryRun, "dry-run", false, "only list what would be removed, and why")
	c.Flags().StringArrayVar(&opts.Input.Force, "force", nil, "remove this kept worktree directory or delete this kept branch all the same (repeat)")
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
	for _, e := range res.Entries {
		if e.Action == "remove" {
			fmt.Fprintf(f.IO.Out, "%s %s %s: %s\n", verb, e.Kind, e.Name, e.Why)
		} else {
			fmt.Fprintf(f.IO.Out, "Kept %s %s: %s\n", e.Kind, e.Name, e.Why)
		}
	}
	if len(res.Entries) == 0 {
		fmt.Fprintln(f.IO.ErrOut, "No orphaned worktrees")
	}
	return nil
}
