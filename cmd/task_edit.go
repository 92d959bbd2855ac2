package cmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// The verbs that change a task itself: its text, its status, archiving.

// TaskEditOptions are `task edit`'s inputs.
type TaskEditOptions struct {
	F     *Factory
	ID    string
	Input api.EditTaskInput
}

// NewCmdTaskEdit builds `kandev task edit`.
func NewCmdTaskEdit(f *Factory, runF func(*TaskEditOptions) error) *cobra.Command {
	opts := &TaskEditOptions{F: f}
	var title, desc string
	var autopilot bool
	c := &cobra.Command{
		Use:   "edit ID",
		Short: "Change a task's title or description",
		Long:  "Change a task's title or description. Autopilot is fixed at creation: naming --autopilot here is refused.",
		Args:  exactArgs(1, "one task ID"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			if c.Flags().Changed("title") {
				opts.Input.Title = &title
			}
			if c.Flags().Changed("description") {
				opts.Input.Description = &desc
			}
			if c.Flags().Changed("autopilot") {
				opts.Input.Autopilot = &autopilot
			}
			if runF != nil {
				return runF(opts)
			}
			return taskEditRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&title, "title", "", "new title")
	c.Flags().StringVarP(&desc, "description", "d", "", "new description")
	c.Flags().BoolVar(&autopilot, "autopilot", false, "refused: autopilot is fixed at creation")
	return c
}

func taskEditRun(ctx context.Context, opts *TaskEditOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	t, err := client.EditTask(ctx, opts.ID, opts.Input)
	if err != nil {
		return err
	}
	return printTaskResult(f, t, "Updated task %s", t.ID)
}

// TaskArchiveOptions are `task archive`'s inputs.
type TaskArchiveOptions struct {
	F  *Factory
	ID string
}

// NewCmdTaskArchive builds `kandev task archive`.
func NewCmdTaskArchive(f *Factory, runF func(*TaskArchiveOptions) error) *cobra.Command {
	opts := &TaskArchiveOptions{F: f}
	return &cobra.Command{
		Use:   "archive ID",
		Short: "Archive a task (idempotent; halts its agent)",
		Long: `Archive a task: it leaves the tree and takes no more turns; its agent is halted.
A done task's own worktree is removed, its uncommitted work first committed on its
branch, and the branch kept unless it was merged. Any other task (cancelled
included) keeps its worktree: kandev task discard removes it.`,
		Args: exactArgs(1, "one task ID"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			if runF != nil {
				return runF(opts)
			}
			return taskArchiveRun(c.Context(), opts)
		},
	}
}

func taskArchiveRun(ctx context.Context, opts *TaskArchiveOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	t, err := client.ArchiveTask(ctx, opts.ID, api.ArchiveTaskInput{})
	if err != nil {
		return err
	}
	return printTaskResult(f, t, "Archived task %s", t.ID)
}

// TaskStatusOptions are `task status`'s inputs.
type TaskStatusOptions struct {
	F      *Factory
	ID     string
	Status core.Status
}

// NewCmdTaskStatus builds `kandev task status`.
func NewCmdTaskStatus(f *Factory, runF func(*TaskStatusOptions) error) *cobra.Command {
	opts := &TaskStatusOptions{F: f}
	return &cobra.Command{
		Use:   "status ID STATUS",
		Short: "Move a task to todo, in_progress, review, done or cancelled",
		Args:  exactArgs(2, "a task ID and a STATUS"),
		RunE: func(c *cobra.Command, args []string) error {
			st, err := core.ParseStatus(args[1])
			if err != nil {
				return &UsageError{Err: err}
			}
			opts.ID, opts.Status = args[0], st
			if runF != nil {
				return runF(opts)
			}
			return taskStatusRun(c.Context(), opts)
		},
	}
}

func taskStatusRun(ctx context.Context, opts *TaskStatusOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	t, err := client.SetTaskStatus(ctx, opts.ID, opts.Status)
	if err != nil {
		return err
	}
	return printTaskResult(f, t, "Task %s is %s", t.ID, t.Status)
}
