package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/kandev/kandev/core/api"
	"github.com/spf13/cobra"
)

// The verbs that steer a task's agent: start, message, stop, answer.

// TaskStartOptions are `task start`'s inputs.
type TaskStartOptions struct {
	F      *Factory
	ID     string
	Prompt string
}

// NewCmdTaskStart builds `kandev task start`.
func NewCmdTaskStart(f *Factory, runF func(*TaskStartOptions) error) *cobra.Command {
	opts := &TaskStartOptions{F: f}
	c := &cobra.Command{
		Use:   "start ID",
		Short: "Start (or resume) a task's agent",
		Args:  exactArgs(1, "one task ID"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			if runF != nil {
				return runF(opts)
			}
			return taskStartRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Prompt, "prompt", "", "message to deliver as the turn")
	return c
}

func taskStartRun(ctx context.Context, opts *TaskStartOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	t, err := client.StartTask(ctx, opts.ID, api.StartTaskInput{Prompt: opts.Prompt})
	if err != nil {
		return err
	}
	return printTaskResult(f, t, "Started task %s", t.ID)
}

// TaskMessageOptions are `task message`'s inputs.
type TaskMessageOptions struct {
	F         *Factory
	ID        string
	Text      string
	Interrupt bool
}

// NewCmdTaskMessage builds `kandev task message`.
func NewCmdTaskMessage(f *Factory, runF func(*TaskMessageOptions) error) *cobra.Command {
	opts := &TaskMessageOptions{F: f}
	c := &cobra.Command{
		Use:   "message ID TEXT",
		Short: "Send a message to a task's agent",
		Long: `Send a message to a task's agent. It is queued and delivered as the agent's next turn
(at once when the agent is idle). With --interrupt the running turn is cancelled and this
message delivered instead. A message supersedes a pending question of the task. Use - as
TEXT to read the message from standard input.`,
		Args: exactArgs(2, "a task ID and the message TEXT"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID, opts.Text = args[0], args[1]
			if opts.Text == "-" {
				b, err := io.ReadAll(f.IO.In)
				if err != nil {
					return err
				}
				opts.Text = string(b)
			}
			if runF != nil {
				return runF(opts)
			}
			return taskMessageRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.Interrupt, "interrupt", false, "cancel the running turn and deliver this message instead")
	return c
}

func taskMessageRun(ctx context.Context, opts *TaskMessageOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	in := api.MessageInput{Text: opts.Text}
	if opts.Interrupt {
		in.Delivery = api.DeliveryInterrupt
	}
	res, err := client.MessageTask(ctx, opts.ID, in)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(res)
	}
	switch res.Status {
	case "queued":
		fmt.Fprintf(f.IO.ErrOut, "Queued for task %s (position %d)\n", res.TaskID, res.Position)
	default:
		fmt.Fprintf(f.IO.ErrOut, "Message to task %s: %s\n", res.TaskID, res.Status)
	}
	return nil
}

// TaskStopOptions are `task stop`'s inputs.
type TaskStopOptions struct {
	F  *Factory
	ID string
}

// NewCmdTaskStop builds `kandev task stop`.
func NewCmdTaskStop(f *Factory, runF func(*TaskStopOptions) error) *cobra.Command {
	opts := &TaskStopOptions{F: f}
	return &cobra.Command{
		Use:   "stop ID",
		Short: "Halt a task's agent (its work and queued messages are kept)",
		Args:  exactArgs(1, "one task ID"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			if runF != nil {
				return runF(opts)
			}
			return taskStopRun(c.Context(), opts)
		},
	}
}

func taskStopRun(ctx context.Context, opts *TaskStopOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	res, err := client.StopTask(ctx, opts.ID, api.StopTaskInput{})
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(res)
	}
	fmt.Fprintln(f.IO.Out, res.Result)
	return nil
}

// TaskAnswerOptions are `task answer`'s inputs.
type TaskAnswerOptions struct {
	F     *Factory
	ID    string
	Input api.AnswerInput
}

// NewCmdTaskAnswer builds `kandev task answer`.
func NewCmdTaskAnswer(f *Factory, runF func(*TaskAnswerOptions) error) *cobra.Command {
	opts := &TaskAnswerOptions{F: f}
	c := &cobra.Command{
		Use:   "answer ID [--option N | TEXT]",
		Short: "Answer a task's pending question to you",
		Long: `Answer a task's pending question to you.

A permission question (an agent asking to run a tool while the permission policy is
ask) takes one of the agent's own options, by number or name: allow once, allow
always (remembered for this task and that tool kind), reject. The agent's request
waits for it and gets the option you pick.

A subtask's question to its parent is the parent's to answer, or yours while the
parent is with you (escalated to you, or handed to you): answer it on the subtask,
or on the parent, which takes its subtasks' questions in the order task show lists
them, the one its escalation names first (--question picks another). The subtask
reads the answer as its next turn.`,
		Example: `  kandev task answer k3f9qa --option 2
  kandev task answer k3f9qa "use the existing session store"
  kandev task answer p1parent "use postgres"           # a parent with you: its subtasks' first question
  kandev task answer k3f9qa --option 3                  # a permission question: reject
  kandev task answer k3f9qa --answer 1 --answer "free text"   # a question with two parts`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usagef("task answer takes a task ID and optionally the answer TEXT")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			if len(args) == 2 {
				opts.Input.Text = args[1]
			}
			given := 0
			for _, b := range []bool{opts.Input.Option > 0, opts.Input.Text != "", len(opts.Input.Answers) > 0} {
				if b {
					given++
				}
			}
			if given != 1 {
				return usagef("give exactly one of --option N, TEXT, or --answer (one per question part)")
			}
			if c.Flags().Changed("option") && opts.Input.Option < 1 {
				return usagef("--option counts from 1")
			}
			if runF != nil {
				return runF(opts)
			}
			return taskAnswerRun(c.Context(), opts)
		},
	}
	c.Flags().IntVar(&opts.Input.Option, "option", 0, "pick option N (counting from 1)")
	c.Flags().StringArrayVar(&opts.Input.Answers, "answer", nil, "answer one question part (an option number or text); repeat per part")
	c.Flags().StringVar(&opts.Input.QuestionID, "question", "", "the question id you are answering (guards against answering a newer one)")
	return c
}

func taskAnswerRun(ctx context.Context, opts *TaskAnswerOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	res, err := client.AnswerQuestion(ctx, opts.ID, opts.Input)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(res)
	}
	fmt.Fprintf(f.IO.ErrOut, "Question %s of task %s: %s", res.QuestionID, res.TaskID, res.Status)
	if res.Delivered != "" {
		fmt.Fprintf(f.IO.ErrOut, " (delivered: %s)", strings.ReplaceAll(res.Delivered, "_", " "))
	}
	fmt.Fprintln(f.IO.ErrOut)
	return nil
}
