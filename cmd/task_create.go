package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/tracker"
)

// TaskCreateOptions are `task create`'s inputs.
type TaskCreateOptions struct {
	F     *Factory
	Input api.CreateTaskInput
	// From is a tracker issue (URL or short form) the task is made from.
	From string
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
  kandev task create "Extract token parsing" --parent k3f9qa -d "keep the API"
  kandev task create --from https://github.com/acme/web/issues/12 --start`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("task create takes one TITLE (quote it): got %d arguments", len(args))
			}
			if len(args) == 0 && opts.Input.Prompt == "" && opts.From == "" {
				return usagef("task create needs a TITLE (or --from an issue, or --prompt to derive a placeholder title from)")
			}
			if opts.From != "" {
				if _, err := tracker.Parse(opts.From); err != nil {
					return &UsageError{Err: err}
				}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Input.Title = args[0]
			}
			if err := createDefaults(f, &opts.Input); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return taskCreateRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.StringVarP(&opts.Input.Description, "description", "d", "", "what the task is about")
	fl.StringVar(&opts.From, "from", "", "a tracker issue to make the task from: its URL, gh:owner/repo#12, gl:group/project#7 or linear:ENG-123 (title and description from the issue unless given; docs/trackers.md)")
	fl.StringVar(&opts.Input.ParentID, "parent", "", "parent task id")
	fl.StringVar(&opts.Input.Profile, "profile", "", "agent profile (default: the parent's; for a top-level task $KANDEV_PROFILE, else config.toml's profile, else the first built-in agent on PATH, else mock)")
	fl.BoolVar(&opts.Input.Autopilot, "autopilot", false, "run on autopilot (fixed at creation, never inherited)")
	fl.StringVar(&opts.Input.Sandbox, "sandbox", "", "where its agent runs: none, bwrap, docker or podman (fixed at creation; default: the parent's, else the profile's, else config.toml's sandbox or autopilot_sandbox, else none, and bwrap on autopilot where installed, always on a host, whose run fails without it)")
	_ = c.RegisterFlagCompletionFunc("sandbox", cobra.FixedCompletions(core.SandboxModes(), cobra.ShellCompDirectiveNoFileComp))
	fl.StringVar(&opts.Input.CWD, "cwd", "", "workspace directory (default: the current directory; for a child, its parent's)")
	fl.StringVar(&opts.Input.Workspace, "workspace", "", "worktree (its own git worktree and branch) or shared (the directory as it is); default: config workspace, auto: a worktree inside a git repository, else shared; a child created without --cwd works in its parent's worktree")
	fl.StringVar(&opts.Input.Base, "base", "", "the ref a worktree branches from (default: the repository's HEAD, or the parent's branch)")
	fl.StringVar(&opts.Input.Host, "host", "", "the host its agent runs on (kandev host list), auto for one with a free slot at its first run, local for this machine (fixed at creation; default: the parent's, else config.toml's host, else this machine; docs/hosts.md)")
	fl.StringVar(&opts.Input.Branch, "branch", "", "the worktree's new branch (default: kandev/<task-id>-<slug-of-title>)")
	fl.StringVar(&opts.Input.Prompt, "prompt", "", "first message for the task's agent")
	fl.BoolVar(&opts.Input.Start, "start", false, "start the task's agent at once")
	fl.StringVar(&opts.Input.Assignee, "assignee", "", "a role or person (default: the profile's own role)")
	fl.StringArrayVar(&opts.Input.BlockedBy, "blocked-by", nil, "a task this one waits on (repeat)")
	fl.StringVar(&opts.Input.Budget, "budget", "", "the task's own budget, shared by its subtree: a currency amount (5USD) or tokens (2M-tokens)")
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
	if opts.From != "" {
		if in, err = taskFromIssue(ctx, f, in, opts.From); err != nil {
			return err
		}
	}
	if in.IdempotencyKey == "" {
		in.IdempotencyKey = "cli-" + core.NewID() + core.NewID() + core.NewID()
	}
	profiles, err := client.ListProfiles(ctx)
	if err != nil {
		return err
	}
	if in.Profile == "" && in.ParentID == "" && in.Assignee == "" {
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
		noticeUnconfined(f, in, t)
		return f.printJSON(t)
	}
	fmt.Fprintln(f.IO.Out, t.ID)
	fmt.Fprintf(f.IO.ErrOut, "Created task %s: %s (%s)\n", t.ID, t.Title, describeMode(t))
	// Said at once: an agent working in the directory as it is changes
	// it in place, with no worktree to review, merge or discard.
	if w := t.Workspace; w != nil && w.Mode == core.WorkspaceShared && in.Workspace != core.WorkspaceShared && t.ParentID == "" {
		fmt.Fprintf(f.IO.ErrOut, "Note: %s is not in a git repository; the agent works in it as it is (no worktree to review, merge or discard)\n", t.CWD)
	}
	noticeUnconfined(f, in, t)
	return nil
}

// noticeUnconfined says, once at its create, that an autopilot task runs
// on the host because this machine has no bubblewrap: the built-in would
// have confined it.
func noticeUnconfined(f *Factory, in api.CreateTaskInput, t core.Task) {
	if !t.Autopilot || in.Sandbox != "" || orNone(t.Sandbox) != core.SandboxNone {
		return
	}
	if err := core.SandboxAvailable(core.SandboxBwrap); err != nil {
		fmt.Fprintf(f.IO.ErrOut, "Notice: autopilot task %s runs unconfined: %s\n", t.ID, err.Error())
	}
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

func orNone(sandbox string) string {
	if sandbox == "" {
		return core.SandboxNone
	}
	return sandbox
}

func describeMode(t core.Task) string {
	parts := []string{"profile " + t.Profile}
	if t.Autopilot {
		parts = append([]string{"autopilot"}, parts...)
	}
	if orNone(t.Sandbox) != core.SandboxNone {
		parts = append(parts, "sandbox "+t.Sandbox)
	}
	if t.ParentID != "" {
		parts = append(parts, "parent "+t.ParentID)
	}
	switch t.Host {
	case "":
	case "auto":
		parts = append(parts, "host auto: placed at its first run")
	default:
		parts = append(parts, "on host "+t.Host)
	}
	if t.Session != nil {
		parts = append(parts, "session "+string(t.Session.State))
	}
	return strings.Join(parts, ", ")
}

// taskFromIssue reads the issue ref names, as the user, and fills the
// create from it.
func taskFromIssue(ctx context.Context, f *Factory, in api.CreateTaskInput, ref string) (api.CreateTaskInput, error) {
	r, err := tracker.Parse(ref)
	if err != nil {
		return in, &UsageError{Err: err}
	}
	tc, err := f.trackerClient(in.CWD)
	if err != nil {
		return in, err
	}
	is, err := tc.Issue(ctx, r)
	if err != nil {
		return in, trackerErr(err)
	}
	return fromIssue(in, is), nil
}
