package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
)

// TaskLogOptions are `task log`'s inputs.
type TaskLogOptions struct {
	F      *Factory
	ID     string
	Follow bool
	After  int64
}

// NewCmdTaskLog builds `kandev task log`.
func NewCmdTaskLog(f *Factory, runF func(*TaskLogOptions) error) *cobra.Command {
	opts := &TaskLogOptions{F: f}
	c := &cobra.Command{
		Use:   "log ID",
		Short: "Print a task's conversation",
		Long:  "Print a task's conversation. With --follow, keep printing as it grows. With --json, one message per line.",
		Args:  exactArgs(1, "one task ID"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			if runF != nil {
				return runF(opts)
			}
			return taskLogRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVarP(&opts.Follow, "follow", "f", false, "keep printing new entries")
	c.Flags().Int64Var(&opts.After, "after", 0, "start after this sequence number")
	return c
}

func taskLogRun(ctx context.Context, opts *TaskLogOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	t, err := client.GetTask(ctx, opts.ID)
	if err != nil {
		return err
	}
	var events <-chan core.Event
	if opts.Follow {
		// Subscribe before reading the backlog so nothing falls between.
		events, err = client.Events(ctx, core.EventsInput{TaskID: t.ID})
		if err != nil {
			return err
		}
	}
	p := &logPrinter{f: f, printed: map[int64]string{}}
	after := opts.After
	for {
		page, err := client.Conversation(ctx, t.ID, core.ConversationInput{After: after, Limit: 500})
		if err != nil {
			return err
		}
		for _, m := range page.Messages {
			p.add(m)
		}
		after = page.Next
		if !page.More {
			break
		}
	}
	if !opts.Follow {
		return nil
	}
	for ev := range events {
		if ev.Message == nil {
			continue
		}
		if ev.Message.Seq <= opts.After {
			continue
		}
		switch ev.Type {
		case core.EventMessageAdded:
			if _, seen := p.printed[ev.Message.Seq]; !seen {
				p.add(*ev.Message)
			}
		case core.EventMessageUpdated:
			p.update(*ev.Message)
		}
	}
	if ctx.Err() == nil {
		// The stream ended without being asked to: the daemon stopped or
		// went away. A script following the log must not take that for a
		// finished task.
		return core.Errorf(core.CodeUnavailable, "the daemon closed the event stream; the log of task %s may go on (kandev task log %s --after %d)", t.ID, t.ID, p.last)
	}
	return nil
}

// logPrinter prints entries once, and for streamed text only what is new.
type logPrinter struct {
	f       *Factory
	printed map[int64]string
	last    int64
}

func (p *logPrinter) add(m core.Message) {
	p.printed[m.Seq] = m.Text
	p.last = m.Seq
	if p.f.JSON {
		_ = p.f.printJSONLine(p.f.IO.Out, m)
		return
	}
	fmt.Fprintln(p.f.IO.Out, formatMessage(m))
}

func (p *logPrinter) update(m core.Message) {
	prev, seen := p.printed[m.Seq]
	if !seen {
		p.add(m)
		return
	}
	if prev == m.Text {
		return
	}
	p.printed[m.Seq] = m.Text
	if p.f.JSON {
		_ = p.f.printJSONLine(p.f.IO.Out, m)
		return
	}
	if (m.Kind == core.MsgAgent || m.Kind == core.MsgThought) && strings.HasPrefix(m.Text, prev) && p.last == m.Seq {
		fmt.Fprintln(p.f.IO.Out, "      "+strings.TrimRight(strings.TrimPrefix(m.Text, prev), "\n"))
		return
	}
	fmt.Fprintln(p.f.IO.Out, formatMessage(m))
}
