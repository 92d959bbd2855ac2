package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
)

// NewCmdTask groups the task verbs.
func NewCmdTask(f *Factory) *cobra.Command {
	c := group("task", "Create, inspect and steer tasks", "")
	c.AddCommand(
		NewCmdTaskCreate(f, nil),
		NewCmdTaskList(f, nil),
		NewCmdTaskShow(f, nil),
		NewCmdTaskEdit(f, nil),
		NewCmdTaskArchive(f, nil),
		NewCmdTaskStatus(f, nil),
		NewCmdTaskStart(f, nil),
		NewCmdTaskMessage(f, nil),
		NewCmdTaskStop(f, nil),
		NewCmdTaskAnswer(f, nil),
		NewCmdTaskLog(f, nil),
		NewCmdTaskHandoff(f),
		NewCmdTaskBlock(f),
		NewCmdTaskQueue(f, nil),
		NewCmdTaskDiff(f, nil),
		NewCmdTaskMerge(f, nil),
		NewCmdTaskDiscard(f, nil),
	)
	return c
}

// --- create -----------------------------------------------------------------

// TaskCreateOptions are `task create`'s inputs.
type TaskCreateOptions struct {
	F     *Factory
	Input core.CreateTaskInput
}

// NewCmdTaskCreate builds `kandev task create`.
func NewCmdTaskCreate(f *Factory, runF func(*TaskCreateOptions) error) *cobra.Command {
	opts := &TaskCreateOptions{F: f}
	c := &cobra.Command{
		Use:   "create TITLE",
		Short: "Create a task",
		Long: `Create a task. Autopilot is decided here, once: it cannot be changed later and a child
never inherits it. An autopilot agent works without asking the operator and sends its
questions to its parent task; its profile must accept kandev's MCP server.`,
		Example: `  kandev task create "Split the auth module" --profile claude --autopilot --start
  kandev task create "Extract token parsing" --parent k3f9qa -d "keep the API"`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("task create takes one TITLE (quote it): got %d arguments", len(args))
			}
			if len(args) == 0 && opts.Input.Prompt == "" {
				return usagef("task create needs a TITLE (or --prompt to derive a placeholder title from)")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Input.Title = args[0]
			}
			// A child without --cwd works where its parent works (in its
			// worktree, if it has one): the daemon fills it in.
			if opts.Input.CWD == "" && opts.Input.ParentID == "" {
				wd, err := os.Getwd()
				if err != nil {
					return err
				}
				opts.Input.CWD = wd
			} else if opts.Input.CWD != "" {
				if abs, err := filepath.Abs(opts.Input.CWD); err == nil {
					opts.Input.CWD = abs
				}
			}
			// A child without --profile takes its parent's (the daemon's
			// rule); the configured default is for top-level tasks.
			if opts.Input.Profile == "" && opts.Input.ParentID == "" {
				p, err := f.configuredProfile()
				if err != nil {
					return err
				}
				opts.Input.Profile = p
			}
			if runF != nil {
				return runF(opts)
			}
			return taskCreateRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.StringVarP(&opts.Input.Description, "description", "d", "", "what the task is about")
	fl.StringVar(&opts.Input.ParentID, "parent", "", "parent task id")
	fl.StringVar(&opts.Input.Profile, "profile", "", "agent profile (default: the parent's; for a top-level task $KANDEV_PROFILE, else config.toml's profile, else the first built-in agent on PATH, else mock)")
	fl.BoolVar(&opts.Input.Autopilot, "autopilot", false, "run on autopilot (fixed at creation, never inherited)")
	fl.StringVar(&opts.Input.CWD, "cwd", "", "workspace directory (default: the current directory; for a child, its parent's)")
	fl.StringVar(&opts.Input.Workspace, "workspace", "", "worktree (its own git worktree and branch) or shared (the directory as it is); default: worktree inside a git repository, and a child created without --cwd works in its parent's worktree")
	fl.StringVar(&opts.Input.Base, "base", "", "the ref a worktree branches from (default: the repository's HEAD, or the parent's branch)")
	fl.StringVar(&opts.Input.Branch, "branch", "", "the worktree's new branch (default: kandev/<task-id>-<slug-of-title>)")
	fl.StringVar(&opts.Input.Prompt, "prompt", "", "first message for the task's agent")
	fl.BoolVar(&opts.Input.Start, "start", false, "start the task's agent at once")
	fl.StringVar(&opts.Input.Assignee, "assignee", "", "a role or person (default: the profile's own role)")
	fl.StringArrayVar(&opts.Input.BlockedBy, "blocked-by", nil, "a task this one waits on (repeat)")
	fl.StringVar(&opts.Input.Surface, "surface", "", "MCP surface of its sessions: kanban-task, office-task or configuration (default: from the assignee)")
	return c
}

func taskCreateRun(ctx context.Context, opts *TaskCreateOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	// One key per invocation: a create whose reply was cut is retried
	// once, and the daemon answers the retry with the task it made.
	in := opts.Input
	if in.IdempotencyKey == "" {
		in.IdempotencyKey = "cli-" + core.NewID() + core.NewID() + core.NewID()
	}
	profiles, err := client.ListProfiles(ctx)
	if err != nil {
		return err
	}
	if in.Profile == "" && in.ParentID == "" {
		// Nothing named one: the first built-in agent on PATH, said aloud
		// so a person knows which agent their task got and why.
		in.Profile = core.PickDefaultProfile(profiles, f.Executable)
		fmt.Fprintf(f.IO.ErrOut, "Using profile %s: no --profile, $KANDEV_PROFILE or config profile; %s\n", in.Profile, pickedWhy(in.Profile))
	}
	t, err := client.CreateTask(ctx, in)
	if core.CodeOf(err) == core.CodeUnavailable && ctx.Err() == nil {
		t, err = client.CreateTask(ctx, in)
	}
	if err != nil {
		return err
	}
	warnCannotStart(f, profiles, t.Profile)
	if f.JSON {
		return f.printJSON(t)
	}
	fmt.Fprintln(f.IO.Out, t.ID)
	fmt.Fprintf(f.IO.ErrOut, "Created task %s: %s (%s)\n", t.ID, t.Title, describeMode(t))
	return nil
}

func pickedWhy(profile string) string {
	if profile == core.DefaultProfile {
		return "no built-in agent's command is on PATH (kandev doctor)"
	}
	return "the first built-in agent whose command is on PATH (kandev config set profile NAME to choose)"
}

// warnCannotStart tells at once that the task's profile cannot start here:
// otherwise the task only waits, and nothing says why until you look.
// The lookup uses this shell's PATH, which the daemon started from it
// shares.
func warnCannotStart(f *Factory, profiles []core.Profile, name string) {
	for _, p := range profiles {
		if p.Name != name {
			continue
		}
		if _, err := core.LookCommand(p, f.Executable); err != nil {
			fmt.Fprintf(f.IO.ErrOut, "Warning: profile %s cannot start: %s is not on PATH; the task waits until it is.\nFix: %s\n",
				p.Name, p.Command, core.CannotStartHint(p))
		}
		return
	}
}

func describeMode(t core.Task) string {
	parts := []string{"profile " + t.Profile}
	if t.Autopilot {
		parts = append([]string{"autopilot"}, parts...)
	}
	if t.ParentID != "" {
		parts = append(parts, "parent "+t.ParentID)
	}
	if t.Session != nil {
		parts = append(parts, "session "+string(t.Session.State))
	}
	return strings.Join(parts, ", ")
}

// --- list -------------------------------------------------------------------

// TaskListOptions are `task list`'s inputs.
type TaskListOptions struct {
	F     *Factory
	Input core.ListTasksInput
}

// NewCmdTaskList builds `kandev task list`.
func NewCmdTaskList(f *Factory, runF func(*TaskListOptions) error) *cobra.Command {
	opts := &TaskListOptions{F: f}
	c := &cobra.Command{
		Use:   "list",
		Short: "List tasks as a tree",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return taskListRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.Input.All, "all", false, "include archived tasks")
	c.Flags().StringVar(&opts.Input.Root, "root", "", "only this task and its descendants")
	return c
}

// rawTaskLister is a client that hands over the daemon's JSON listing as
// it came (daemonclient.Client does).
type rawTaskLister interface {
	ListTasksRaw(ctx context.Context, in core.ListTasksInput, w io.Writer) error
}

func taskListRun(ctx context.Context, opts *TaskListOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	if f.JSON {
		// Pass the daemon's JSON through untouched: it is already the
		// documented shape, and large lists stay fast.
		if raw, ok := client.(rawTaskLister); ok {
			return raw.ListTasksRaw(ctx, opts.Input, f.IO.Out)
		}
		tasks, err := client.ListTasks(ctx, opts.Input)
		if err != nil {
			return err
		}
		return f.printJSON(tasks)
	}
	// The tree shows only what a summary holds: decoding whole tasks was
	// most of the text list at 100,000 tasks.
	list := client.ListTasks
	if sc, ok := client.(core.TaskSummaries); ok {
		list = sc.ListTaskSummaries
	}
	tasks, err := list(ctx, opts.Input)
	if err != nil {
		return err
	}
	if len(tasks) == 0 {
		fmt.Fprintln(f.IO.ErrOut, "No tasks. Create one with: kandev task create TITLE")
		return nil
	}
	writeTree(f.IO.Out, tasks)
	return nil
}

// --- show -------------------------------------------------------------------

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

func taskShowRun(ctx context.Context, opts *TaskShowOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
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

// --- edit -------------------------------------------------------------------

// TaskEditOptions are `task edit`'s inputs.
type TaskEditOptions struct {
	F     *Factory
	ID    string
	Input core.EditTaskInput
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

func printTaskResult(f *Factory, t core.Task, format string, args ...any) error {
	if f.JSON {
		return f.printJSON(t)
	}
	fmt.Fprintf(f.IO.ErrOut, format+"\n", args...)
	return nil
}

// --- archive ----------------------------------------------------------------

// TaskIDOptions serve verbs that take one task id.
type TaskIDOptions struct {
	F  *Factory
	ID string
}

// NewCmdTaskArchive builds `kandev task archive`.
func NewCmdTaskArchive(f *Factory, runF func(*TaskIDOptions) error) *cobra.Command {
	opts := &TaskIDOptions{F: f}
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
			client, err := f.Client(c.Context())
			if err != nil {
				return err
			}
			t, err := client.ArchiveTask(c.Context(), opts.ID)
			if err != nil {
				return err
			}
			return printTaskResult(f, t, "Archived task %s", t.ID)
		},
	}
}

// --- status -----------------------------------------------------------------

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
			client, err := f.Client(c.Context())
			if err != nil {
				return err
			}
			t, err := client.SetTaskStatus(c.Context(), opts.ID, opts.Status)
			if err != nil {
				return err
			}
			return printTaskResult(f, t, "Task %s is %s", t.ID, t.Status)
		},
	}
}

// --- start ------------------------------------------------------------------

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
			client, err := f.Client(c.Context())
			if err != nil {
				return err
			}
			t, err := client.StartTask(c.Context(), opts.ID, core.StartTaskInput{Prompt: opts.Prompt})
			if err != nil {
				return err
			}
			return printTaskResult(f, t, "Started task %s", t.ID)
		},
	}
	c.Flags().StringVar(&opts.Prompt, "prompt", "", "message to deliver as the turn")
	return c
}

// --- message ----------------------------------------------------------------

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
			client, err := f.Client(c.Context())
			if err != nil {
				return err
			}
			in := core.MessageInput{Text: opts.Text}
			if opts.Interrupt {
				in.Delivery = core.DeliveryInterrupt
			}
			res, err := client.MessageTask(c.Context(), opts.ID, in)
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
		},
	}
	c.Flags().BoolVar(&opts.Interrupt, "interrupt", false, "cancel the running turn and deliver this message instead")
	return c
}

// --- stop -------------------------------------------------------------------

// NewCmdTaskStop builds `kandev task stop`.
func NewCmdTaskStop(f *Factory, runF func(*TaskIDOptions) error) *cobra.Command {
	opts := &TaskIDOptions{F: f}
	return &cobra.Command{
		Use:   "stop ID",
		Short: "Halt a task's agent (its work and queued messages are kept)",
		Args:  exactArgs(1, "one task ID"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			if runF != nil {
				return runF(opts)
			}
			client, err := f.Client(c.Context())
			if err != nil {
				return err
			}
			res, err := client.StopTask(c.Context(), opts.ID)
			if err != nil {
				return err
			}
			if f.JSON {
				return f.printJSON(res)
			}
			fmt.Fprintln(f.IO.Out, res.Result)
			return nil
		},
	}
}

// --- answer -----------------------------------------------------------------

// TaskAnswerOptions are `task answer`'s inputs.
type TaskAnswerOptions struct {
	F     *Factory
	ID    string
	Input core.AnswerInput
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
waits for it and gets the option you pick.`,
		Example: `  kandev task answer k3f9qa --option 2
  kandev task answer k3f9qa "use the existing session store"
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
			client, err := f.Client(c.Context())
			if err != nil {
				return err
			}
			res, err := client.AnswerQuestion(c.Context(), opts.ID, opts.Input)
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
		},
	}
	c.Flags().IntVar(&opts.Input.Option, "option", 0, "pick option N (counting from 1)")
	c.Flags().StringArrayVar(&opts.Input.Answers, "answer", nil, "answer one question part (an option number or text); repeat per part")
	c.Flags().StringVar(&opts.Input.QuestionID, "question", "", "the question id you are answering (guards against answering a newer one)")
	return c
}
