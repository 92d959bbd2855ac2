package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// Wait outcomes and their exit codes: each outcome exits differently so a
// script (or an agent) can branch on it.
var waitOutcomes = []struct {
	Name string
	Code int
	Doc  string
}{
	{"done", 0, "the task is done"},
	{"failed", 13, "its agent's run failed"},
	{"cancelled", 14, "the task was cancelled"},
	{"question", 11, "it asks you a question"},
	{"escalated", 12, "it stalled and was escalated"},
	{"stuck", 15, "it stalled with nobody to escalate to"},
	{"stopped", 16, "it was stopped (kandev task stop): nothing runs until it is started again"},
	{"budget", 17, "its tree spent its budget: its turns were stopped and it is with a person until the budget is raised"},
	{"person", 10, "it was handed to a person, or came back to you when its agent ended a turn without handing it on"},
	{"timeout", 124, "--timeout passed first"},
	{"interrupted", 130, "a signal (Ctrl-C, SIGTERM) ended the wait"},
}

func waitCode(outcome string) int {
	for _, o := range waitOutcomes {
		if o.Name == outcome {
			return o.Code
		}
	}
	return 1
}

// WaitExit carries a wait outcome's exit code out of the command.
type WaitExit struct {
	Outcome string
	Code    int
}

func (w *WaitExit) Error() string { return "wait: " + w.Outcome }

// waitOutcome says whether the task needs someone now, and why.
func waitOutcome(t core.Task) (string, string) {
	switch {
	case t.Status == core.StatusDone:
		return "done", "task is done"
	case t.Status == core.StatusCancelled:
		return "cancelled", "task was cancelled"
	case t.OverBudget():
		// Before "stopped": a budget stops the tree's turns, and the budget
		// is what must change before anything moves.
		if core.ByLimit(t.Stalled.Detail) {
			// A spend limit's: the detail says when it rolls and how to raise it.
			return "budget", "spend limit reached: " + oneLineWait(t.Stalled.Detail)
		}
		if strings.Contains(t.Stalled.Detail, "kandev task budget ") {
			// A hold for a fault (ADR 0075) says its own way on.
			return "budget", "budget held: " + oneLineWait(t.Stalled.Detail)
		}
		return "budget", "budget reached: " + oneLineWait(t.Stalled.Detail) + "; raise it with kandev task budget " + t.ID + " --add AMOUNT"
	case t.WaitCause == core.WaitLimit:
		// Held by a reached spend limit (ADR 0077): no turn starts until
		// its window rolls or a person raises it, as a budget's halt.
		return "budget", "spend limit reached: " + oneLineWait(t.Waiting)
	case t.Halted && (t.Session == nil || !t.Session.State.Live()):
		// A stop ends the run and holds the queue: nothing moves until
		// someone starts the task again.
		return "stopped", "nothing runs until kandev task start " + t.ID
	case t.PendingQuestion != nil && t.PendingQuestion.Kind.ForPerson():
		return "question", "question " + t.PendingQuestion.ID + " for you: " + t.PendingQuestion.Text
	case t.Stuck():
		return "stuck", "stalled with nobody to escalate to: it stays with " + t.Stalled.From.String() + " and waits for you: " + oneLineWait(t.Stalled.Detail)
	case t.BackToYou() && t.Assignee != nil:
		return "person", "back to " + t.Assignee.Name + ": ended without handing on: " + oneLineWait(t.Stalled.Detail)
	case t.Escalated():
		// Before "failed": a failed run is a stall, and where it went is
		// what the caller must know.
		to := ""
		if t.Assignee != nil {
			to = " to " + t.Assignee.Describe()
		}
		return "escalated", t.Stalled.Reason + ": escalated from " + t.Stalled.From.String() + to
	case t.Session != nil && t.Session.State == core.SessionFailed && !t.Halted:
		return "failed", "run failed: " + t.Session.Error
	case t.Assignee != nil && t.Assignee.IsPerson():
		return "person", "handed to " + t.Assignee.Name
	}
	return "", ""
}

// WaitOptions are `wait`'s inputs.
type WaitOptions struct {
	F       *Factory
	ID      string
	Timeout time.Duration
}

// NewCmdWait builds `kandev wait`.
func NewCmdWait(f *Factory, runF func(*WaitOptions) error) *cobra.Command {
	opts := &WaitOptions{F: f}
	c := &cobra.Command{
		Use:   "wait ID [--timeout D]",
		Short: "Block until a task needs someone, and say why",
		Long: `Block until the task needs someone — done, handed to a person, a question for you,
escalated, stuck with nobody to escalate to, failed, stopped or cancelled — then print why.
An agent that handed the task on and is still finishing its turn is waited for, so
the next command sees the run settled.
Exit codes:
  0 done, 10 handed to a person (or back to you), 11 a question for you, 12 escalated,
  13 failed, 14 cancelled, 15 stuck, 16 stopped, 17 budget or spend limit reached, 124 timeout,
  130 interrupted (a signal),
  1 error, 2 usage.`,
		Args: exactArgs(1, "one task ID"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			if runF != nil {
				return runF(opts)
			}
			return waitRun(c.Context(), opts)
		},
	}
	c.Flags().DurationVar(&opts.Timeout, "timeout", 0, "give up after this long (exit 124)")
	return c
}

func waitRun(parent context.Context, opts *WaitOptions) (err error) {
	f, id, timeout := opts.F, opts.ID, opts.Timeout
	ctx := parent
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	defer func() { err = f.waitCut(parent, ctx, id, timeout, err) }()
	client, err := f.ReadClient(ctx)
	if err != nil {
		return err
	}
	// Subscribe first so no change falls between the read and the wait.
	events, err := client.Events(ctx, api.EventsInput{TaskID: id})
	if err != nil {
		return err
	}
	t, err := client.GetTask(ctx, id)
	if err != nil {
		return err
	}
	if t.ID != id {
		events, err = client.Events(ctx, api.EventsInput{TaskID: t.ID})
		if err != nil {
			return err
		}
	}
	// settling is the run whose turn was still going when the outcome
	// was reached (an agent that handed the task on and keeps
	// talking): wait returns once that turn has ended, so what the
	// caller reads next shows the run settled.
	var settling, outcome, why string
	for {
		if outcome, why = waitOutcome(t); outcome == "" {
			settling = ""
		} else if windingDown(t) && (settling == "" || settling == t.Session.ID) {
			settling = t.Session.ID
		} else {
			return f.waitResult(t, outcome, why)
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				if outcome != "" {
					return f.waitResult(t, outcome, why)
				}
				return f.waitResult(t, "timeout", fmt.Sprintf("still %s after %s", t.Status, timeout))
			}
			return ctx.Err()
		case ev, ok := <-events:
			if !ok {
				if ctx.Err() != nil {
					continue
				}
				return core.Errorf(core.CodeUnavailable, "the daemon closed the event stream")
			}
			if ev.Task != nil {
				t = *ev.Task
			} else if ev.Type == core.EventSessionUpdated || ev.Type == core.EventQuestionUpdated || ev.Type == core.EventResync {
				if t, err = client.GetTask(ctx, t.ID); err != nil {
					return err
				}
			}
		}
	}
}

// windingDown reports a run still in its turn whose role no longer holds
// the task (it handed the task on and keeps talking until its turn ends).
// The run of the task's holder is not waited for: a question for you keeps
// its turn open on purpose, and a manager an escalation woke is new work.
func windingDown(t core.Task) bool {
	if t.Session == nil {
		return false
	}
	switch t.Session.State {
	case core.SessionCreated, core.SessionStarting, core.SessionRunning:
	default:
		return false
	}
	return t.Assignee == nil || !t.Assignee.IsRoleNamed(t.Session.Role)
}

// waitCut turns a wait cut short into its outcome, quietly: its own
// --timeout, wherever it struck (connecting, subscribing, reading the
// task), is the timeout outcome (124); a signal (Ctrl-C, SIGTERM from
// timeout(1)) ends it with 130 and no "context canceled".
func (f *Factory) waitCut(parent, ctx context.Context, id string, timeout time.Duration, err error) error {
	var we *WaitExit
	if err == nil || errors.As(err, &we) {
		return err
	}
	if parent.Err() != nil {
		return &WaitExit{Outcome: "interrupted", Code: waitCode("interrupted")}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		why := fmt.Sprintf("no answer from the daemon within %s", timeout)
		if f.JSON {
			_ = f.printJSON(map[string]any{"task_id": id, "outcome": "timeout", "reason": why, "exit_code": waitCode("timeout"), "task": nil})
		} else {
			fmt.Fprintf(f.IO.Out, "%s timeout: %s\n", id, why)
		}
		return &WaitExit{Outcome: "timeout", Code: waitCode("timeout")}
	}
	return err
}

func oneLineWait(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:199]) + "…"
	}
	return s
}

func (f *Factory) waitResult(t core.Task, outcome, why string) error {
	// The line is "ID OUTCOME: WHY": a reason that begins with its outcome
	// would say it twice ("stopped: stopped: …").
	why = strings.TrimPrefix(why, outcome+": ")
	if f.JSON {
		_ = f.printJSON(map[string]any{"task_id": t.ID, "outcome": outcome, "reason": why, "exit_code": waitCode(outcome), "task": t})
	} else {
		fmt.Fprintf(f.IO.Out, "%s %s: %s\n", t.ID, outcome, why)
	}
	if code := waitCode(outcome); code != 0 {
		return &WaitExit{Outcome: outcome, Code: code}
	}
	return nil
}
