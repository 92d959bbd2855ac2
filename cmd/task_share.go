package cmd

import (
	"context"
	"fmt"

	"github.com/kandev/kandev/core/api"
	"github.com/spf13/cobra"
)

// Sharing a task's work: push its branch, open a pull request.

// TaskPushOptions are `task push`'s inputs.
type TaskPushOptions struct {
	F     *Factory
	ID    string
	Input api.PushInput
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

// TaskPROptions are `task pr`'s inputs.
type TaskPROptions struct {
	F     *Factory
	ID    string
	Input api.PullRequestInput
}

// NewCmdTaskPR builds `kandev task pr`.
func NewCmdTaskPR(f *Factory, runF func(*TaskPROptions) error) *cobra.Command {
	opts := &TaskPROptions{F: f}
	c := &cobra.Command{
		Use:   "pr ID",
		Short: "Push a task's branch and open a pull request for it (with gh)",
		Long: `Push a task's branch (as kandev task push does), then open a pull request for it
with GitHub's gh CLI, which must be installed and logged in (gh auth login): its
title is the task's, its body the task's last handoff message and the stat of its
diff. A repository whose origin is on GitLab gets a merge request with glab
instead. The daemon looks gh (glab) up on this command's PATH and runs it with it,
so one installed after the daemon started is found. The URL is recorded on the task
(kandev task show, and get_task_kandev for agents). When gh fails the branch is
still pushed and the error says why: not installed (and the PATH searched), not
logged in, no network, no such repository, or refused by the host.`,
		Args: exactArgs(1, "one task ID"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			if runF != nil {
				return runF(opts)
			}
			return taskPRRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.Input.Draft, "draft", false, "open it as a draft")
	c.Flags().StringVar(&opts.Input.Base, "base", "", "the branch to merge into (default: the repository's default branch)")
	c.Flags().StringVar(&opts.Input.Remote, "remote", "", "the remote to push to (default origin)")
	return c
}

func taskPRRun(ctx context.Context, opts *TaskPROptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	in := opts.Input
	in.Path = f.Getenv("PATH") // gh is looked up where this command would find it
	res, err := client.PullRequestTask(ctx, opts.ID, in)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(res)
	}
	fmt.Fprintln(f.IO.Out, res.URL)
	fmt.Fprintf(f.IO.ErrOut, "Opened a pull request for task %s (branch %s)\n", res.Task.ID, res.Push.Branch)
	return nil
}
