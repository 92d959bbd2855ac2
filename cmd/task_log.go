package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
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
		Long: "Print a task's conversation. With --follow, keep printing as it grows: streamed text continues its entry, " +
			"so once a turn is over the output is what `task log` prints. With --json, one message per line " +
			"(with --follow, an agent's message or thought once it is whole).",
		Args: exactArgs(1, "one task ID"),
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
	client, err := f.ReadClient(ctx)
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
		events, err = client.Events(ctx, api.EventsInput{TaskID: t.ID})
		if err != nil {
			return err
		}
	}
	p := &logPrinter{f: f, printed: map[int64]core.Message{}, refetch: func(seq int64) (core.Message, bool) {
		// An append that does not join what was printed (one was missed):
		// the entry as it stands now.
		page, err := client.Conversation(ctx, t.ID, api.ConversationInput{After: seq - 1, Limit: 1})
		if err != nil || len(page.Messages) == 0 || page.Messages[0].Seq != seq {
			return core.Message{}, false
		}
		return page.Messages[0], true
	}}
	defer p.end()
	after := opts.After
	for {
		page, err := client.Conversation(ctx, t.ID, api.ConversationInput{After: after, Limit: 500})
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
		switch {
		case ev.Type == core.EventMessageAppended && ev.Append != nil:
			if ev.Append.Seq > opts.After {
				p.appendText(*ev.Append)
			}
			continue
		case ev.Message == nil || ev.Message.Seq <= opts.After:
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

// logPrinter prints entries once, and for streamed text only what is
// new: text appended to the entry last printed continues its line, so
// --follow prints what `task log` prints once the turn is over (ADR 0050).
// With --json an agent's message or thought, or a tool call whose output
// streams, is printed whole once something else happens (another entry,
// the stream's end): one line per entry, as `task log --json` prints it.
type logPrinter struct {
	f       *Factory
	printed map[int64]core.Message
	last    int64
	// open: the streamed entry whose line is not ended yet, so appends
	// continue it; held: its trailing newlines, which `task log` trims,
	// printed only when more text follows them.
	open int64
	held string
	// pending (--json): the entry held back until it is whole.
	pending int64
	refetch func(seq int64) (core.Message, bool)
}

func streamed(k core.MessageKind) bool { return k == core.MsgAgent || k == core.MsgThought }

func (p *logPrinter) add(m core.Message) {
	p.printed[m.Seq] = m
	p.last = m.Seq
	if p.f.JSON {
		p.flushPending()
		if streamed(m.Kind) {
			p.pending = m.Seq
			return
		}
		_ = p.f.printJSONLine(p.f.IO.Out, m)
		return
	}
	p.print(m)
}

// print writes an entry; a streamed one is left open for its appends.
func (p *logPrinter) print(m core.Message) {
	p.closeOpen()
	if !streamed(m.Kind) {
		fmt.Fprintln(p.f.IO.Out, formatMessage(m))
		return
	}
	fmt.Fprint(p.f.IO.Out, formatMessage(m))
	p.open, p.held = m.Seq, m.Text[len(strings.TrimRight(m.Text, "\n")):]
}

func (p *logPrinter) closeOpen() {
	if p.open != 0 {
		fmt.Fprintln(p.f.IO.Out)
		p.open, p.held = 0, ""
	}
}

func (p *logPrinter) flushPending() {
	if p.pending == 0 {
		return
	}
	_ = p.f.printJSONLine(p.f.IO.Out, p.printed[p.pending])
	p.pending = 0
}

// end finishes what is printed: the open line, the held entry.
func (p *logPrinter) end() {
	if p.f.JSON {
		p.flushPending()
		return
	}
	p.closeOpen()
}

func (p *logPrinter) update(m core.Message) {
	prev, seen := p.printed[m.Seq]
	if !seen {
		p.add(m)
		return
	}
	if prev.Text == m.Text && (!p.f.JSON || string(prev.Meta) == string(m.Meta)) {
		return
	}
	p.printed[m.Seq] = m
	if p.f.JSON {
		if p.pending == m.Seq {
			return
		}
		p.flushPending()
		_ = p.f.printJSONLine(p.f.IO.Out, m)
		return
	}
	if streamed(m.Kind) && strings.HasPrefix(m.Text, prev.Text) && p.open == m.Seq {
		p.continueLine(m.Text[len(prev.Text):])
		return
	}
	p.print(m)
}

// appendText applies text streamed onto an entry.
func (p *logPrinter) appendText(a core.MessageAppend) {
	cur, seen := p.printed[a.Seq]
	if !seen {
		if m, ok := p.refetch(a.Seq); ok {
			p.add(m)
		}
		return
	}
	switch a.Apply(&cur) {
	case core.AppendHeld:
		return
	case core.AppendGap:
		if m, ok := p.refetch(a.Seq); ok {
			p.update(m)
		}
		return
	}
	p.printed[a.Seq] = cur
	if p.f.JSON {
		if p.pending != a.Seq {
			p.flushPending()
			p.pending = a.Seq
		}
		return
	}
	if a.Field != "" || !streamed(cur.Kind) {
		return // a tool call's output: the text log shows the call's line only
	}
	if p.open == a.Seq {
		p.continueLine(a.Text)
		return
	}
	p.print(cur)
}

// continueLine prints text appended to the open entry, holding back the
// newlines it ends with.
func (p *logPrinter) continueLine(text string) {
	s := p.held + text
	body := strings.TrimRight(s, "\n")
	if body != "" {
		fmt.Fprint(p.f.IO.Out, body)
	}
	p.held = s[len(body):]
}
