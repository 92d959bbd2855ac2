package cmd

import (
	"context"
	"fmt"

	"github.com/kandev/kandev/core/api"
	"github.com/spf13/cobra"
)

// The verbs that say who holds a task and what it waits on: handoff and
// block.

// TaskHandoffOptions are `task handoff`'s inputs.
type TaskHandoffOptions struct {
	F     *Factory
	ID    string
	Input api.HandoffInput
}

// NewCmdTaskHandoff builds `kandev task handoff`.
func NewCmdTaskHandoff(f *Factory, runF func(*TaskHandoffOptions) error) *cobra.Command {
	opts := &TaskHandoffOptions{F: f}
	c := &cobra.Command{
		Use:   "handoff ID --to NAME|back [--message TEXT]",
		Short: "Hand a task to a role (its agent takes over) or a person",
		Example: `  kandev task handoff k3f9qa --to engineer --message "the failing test is in auth_test.go"
  kandev task handoff k3f9qa --to back`,
		Args: exactArgs(1, "one task ID"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			if opts.Input.To == "" {
				return usagef("--to is required: a role, a person, or back")
			}
			if runF != nil {
				return runF(opts)
			}
			return taskHandoffRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Input.To, "to", "", "a role, a person, or back (whoever handed it to its current assignee)")
	c.Flags().StringVarP(&opts.Input.Message, "message", "m", "", "what the next holder needs to know")
	return c
}

func taskHandoffRun(ctx context.Context, opts *TaskHandoffOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	res, err := client.HandoffTask(ctx, opts.ID, opts.Input)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(res)
	}
	fmt.Fprintf(f.IO.ErrOut, "Task %s handed from %s to %s %s (%s)\n", res.TaskID, res.From.String(), res.To.Kind, res.To.Name, res.Delivered)
	return nil
}

// TaskBlockOptions are `task block`'s inputs.
type TaskBlockOptions struct {
	F     *Factory
	ID    string
	Input api.BlockInput
}

// NewCmdTaskBlock builds `kandev task block`.
func NewCmdTaskBlock(f *Factory, runF func(*TaskBlockOptions) error) *cobra.Command {
	opts := &TaskBlockOptions{F: f}
	c := &cobra.Command{
		Use:   "block ID --on OTHER... [--remove]",
		Short: "Make a task wait on others (it is woken when each finishes)",
		Args:  exactArgs(1, "one task ID"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			if len(opts.Input.On) == 0 {
				return usagef("--on is required")
			}
			if runF != nil {
				return runF(opts)
			}
			return taskBlockRun(c.Context(), opts)
		},
	}
	c.Flags().StringArrayVar(&opts.Input.On, "on", nil, "a task it waits on (repeat)")
	c.Flags().BoolVar(&opts.Input.Remove, "remove", false, "stop waiting on them")
	return c
}

func taskBlockRun(ctx context.Context, opts *TaskBlockOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	t, err := client.BlockTask(ctx, opts.ID, opts.Input)
	if err != nil {
		return err
	}
	return printTaskResult(f, t, "Task %s waits on: %v", t.ID, t.BlockedBy)
}
