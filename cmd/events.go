package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// EventsOptions are `events`' inputs.
type EventsOptions struct {
	F      *Factory
	TaskID string
}

// NewCmdEvents builds `kandev events`.
func NewCmdEvents(f *Factory, runF func(*EventsOptions) error) *cobra.Command {
	opts := &EventsOptions{F: f}
	c := &cobra.Command{
		Use:   "events",
		Short: "Tail the daemon's event stream",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return eventsRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.TaskID, "task", "", "only this task's events")
	return c
}

func eventsRun(ctx context.Context, opts *EventsOptions) error {
	f := opts.F
	client, err := f.ReadClient(ctx)
	if err != nil {
		return err
	}
	ch, err := client.Events(ctx, api.EventsInput{TaskID: opts.TaskID})
	if err != nil {
		return err
	}
	for ev := range ch {
		if f.JSON {
			if err := f.printJSONLine(f.IO.Out, ev); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintln(f.IO.Out, describeEvent(ev))
	}
	if ctx.Err() == nil {
		return core.Errorf(core.CodeUnavailable, "the daemon closed the event stream")
	}
	return nil
}

func describeEvent(ev core.Event) string {
	s := fmt.Sprintf("%6d %s %-16s", ev.Seq, ev.At.Local().Format("15:04:05.000"), ev.Type)
	switch {
	case ev.Task != nil:
		s += fmt.Sprintf(" %s %s %q", ev.Task.ID, ev.Task.Status, truncate(ev.Task.Title, 50))
	case ev.Session != nil:
		s += fmt.Sprintf(" %s session %s %s", ev.TaskID, ev.Session.ID, ev.Session.State)
	case ev.Message != nil:
		s += fmt.Sprintf(" %s #%d %s %q", ev.TaskID, ev.Message.Seq, ev.Message.Kind, truncate(strings.ReplaceAll(ev.Message.Text, "\n", " "), 60))
	case ev.Question != nil:
		s += fmt.Sprintf(" %s question %s %s", ev.TaskID, ev.Question.ID, ev.Question.Status)
	case ev.Profile != nil:
		s += " profile " + ev.Profile.Name
	}
	return s
}
