package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
)

// Sharing a task's work: push its branch.

// TaskPushOptions are `task push`'s inputs.
type TaskPushOptions struct {
	F     *Factory
	ID    string
	Input core.PushInput
}

// NewCmdTaskPush builds `kandev task push`.
func NewCmdTaskPush(f *Factory, runF func(*TaskPushOptions) error) *cobra.Command {
	opts := &TaskPushOptions{F: f}
	c := &cobra.Command{
		Use:   "push ID",
		Short: "Push a task's branch to a remote of its repository",
		Long: `Push a task's branch to a remote of its repository (origin unless --remote), with
its upstream set. Uncommitted work in the task's worktree is committed on the branch
first, with a message naming the task. Refused, changing nothing, when the repository
has no such remote, the branch has nothing to push, the remote refuses (the commit
made for the push is undone), or the task's agent is in a turn.`,
		Args: exactArgs(1, "one task ID"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			if runF != nil {
				return runF(opts)
			}
			return taskPushRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Input.Remote, "remote", "", "the remote to push to (default origin)")
	return c
}

func taskPushRun(ctx context.Context, opts *TaskPushOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	res, err := client.PushTask(ctx, opts.ID, opts.Input)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(res)
	}
	extra := ""
	if res.Committed {
		extra = "; its uncommitted work was committed first"
	}
	fmt.Fprintf(f.IO.ErrOut, "Pushed %s to %s (%s)%s\n", res.Branch, res.Remote, shortID(res.Commit), extra)
	return nil
}
