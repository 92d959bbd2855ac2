package cmd

import (
	"context"

	"github.com/spf13/cobra"
)

// TaskShowOptions are `task show`'s inputs.
type TaskShowOptions struct {
	F  *Factory
	ID string
}

// NewCmdTaskShow builds `kandev task show`.
func NewCmdTaskShow(f *Factory, runF func(*TaskShowOptions) error) *cobra.Command {
	opts := &TaskShowOptions{F: f}
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show one task",
		Args:  exactArgs(1, "one task ID"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			if runF != nil {
				return runF(opts)
			}
			return taskShowRun(c.Context(), opts)
		},
	}
}

// rawTaskGetter is a client that hands over the daemon's JSON of a task as
// it came (daemonclient.Client does).
type rawTaskGetter interface {
	GetTaskJSON(ctx context.Context, id string) ([]byte, error)
}

func taskShowRun(ctx context.Context, opts *TaskShowOptions) error {
	f := opts.F
	client, err := f.ReadClient(ctx)
	if err != nil {
		return err
	}
	if raw, ok := client.(rawTaskGetter); ok && f.JSON {
		// The daemon's JSON is already the documented shape (the --json
		// rule): printed as it came, as task list --json does.
		b, err := raw.GetTaskJSON(ctx, opts.ID)
		if err != nil {
			return err
		}
		return f.writeJSON(b)
	}
	t, err := client.GetTask(ctx, opts.ID)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(t)
	}
	writeTaskDetail(f.IO.Out, t)
	return nil
}
