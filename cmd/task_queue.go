package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/textsafe"
)

// TaskQueueOptions are `task queue`'s inputs.
type TaskQueueOptions struct {
	F     *Factory
	ID    string
	Drop  int64
	Clear bool
}

// NewCmdTaskQueue builds `kandev task queue`.
func NewCmdTaskQueue(f *Factory, runF func(*TaskQueueOptions) error) *cobra.Command {
	opts := &TaskQueueOptions{F: f}
	c := &cobra.Command{
		Use:   "queue ID [--drop QID | --clear]",
		Short: "List a task's queued messages, or drop them",
		Long: `List what waits for a task's next turns, in delivery order: each item's queue id,
kind, sender and text. --drop QID removes one item by its queue id (the first column;
it stays the same while the item waits, unlike its position), --clear removes all.
Dropping is the operator's: it is noted in the task's conversation.`,
		Example: `  kandev task queue k3f9qa
  kandev task queue k3f9qa --drop 42
  kandev task queue k3f9qa --clear`,
		Args: exactArgs(1, "one task ID"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			if opts.Drop != 0 && opts.Clear {
				return usagef("give --drop QID or --clear, not both")
			}
			if c.Flags().Changed("drop") && opts.Drop <= 0 {
				return usagef("--drop takes a queue id (a positive number, the first column of kandev task queue %s)", opts.ID)
			}
			if runF != nil {
				return runF(opts)
			}
			return taskQueueRun(c.Context(), opts)
		},
	}
	c.Flags().Int64Var(&opts.Drop, "drop", 0, "drop the queued item with this queue `QID`")
	c.Flags().BoolVar(&opts.Clear, "clear", false, "drop every queued item")
	return c
}

func taskQueueRun(ctx context.Context, opts *TaskQueueOptions) error {
	f := opts.F
	connect := f.ReadClient // listing the queue only reads
	if opts.Drop != 0 || opts.Clear {
		connect = f.Client
	}
	client, err := connect(ctx)
	if err != nil {
		return err
	}
	var v api.QueueView
	if opts.Drop != 0 || opts.Clear {
		v, err = client.DropQueued(ctx, opts.ID, api.DropQueueInput{ID: opts.Drop, All: opts.Clear})
	} else {
		v, err = client.TaskQueue(ctx, opts.ID)
	}
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(v)
	}
	if opts.Drop != 0 || opts.Clear {
		fmt.Fprintf(f.IO.ErrOut, "Dropped %d item(s) from task %s.\n", len(v.Dropped), v.TaskID)
	}
	if len(v.Items) == 0 {
		fmt.Fprintf(f.IO.ErrOut, "Nothing queued on task %s.\n", v.TaskID)
		return nil
	}
	for _, it := range v.Items {
		fmt.Fprintln(f.IO.Out, queueLine(it))
	}
	return nil
}

// queueLine is one item of `task queue`: id, position, kind, sender, text.
func queueLine(it api.QueuedItem) string {
	kind := it.Kind
	if it.Interrupt {
		kind += "!"
	}
	return fmt.Sprintf("%6d  #%-3d %-11s %-16s %s", it.ID, it.Position, kind, it.Sender.Label(),
		truncate(textsafe.Line(strings.TrimSpace(it.Text)), 100))
}
