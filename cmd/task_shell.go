package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"
)

// The verbs that step into a task's directory: shell and path (issue 22:
// a person could not even cd into a task's worktree without reading JSON).

// TaskPathOptions are `task path`'s inputs.
type TaskPathOptions struct {
	F  *Factory
	ID string
}

// NewCmdTaskPath builds `kandev task path`.
func NewCmdTaskPath(f *Factory, runF func(*TaskPathOptions) error) *cobra.Command {
	opts := &TaskPathOptions{F: f}
	return &cobra.Command{
		Use:   "path ID",
		Short: "Print the directory a task works in",
		Long: `Print the directory a task's agent works in: its worktree, its parent's
worktree, or its shared directory, alone on a line, so that

    cd "$(kandev task path ID)"

takes you there. A task whose worktree was discarded, or removed when it
was archived done, has none: the command says so and exits 1.`,
		Example: `  cd "$(kandev task path 7k7rsa)"
  kandev task path 7k7rsa --json`,
		Args: exactArgs(1, "one task ID"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			if runF != nil {
				return runF(opts)
			}
			return taskPathRun(c.Context(), opts)
		},
	}
}

// taskPath is `task path --json`.
type taskPath struct {
	TaskID    string `json:"task_id"`
	Dir       string `json:"dir"`
	Workspace string `json:"workspace"` // worktree, inherit, shared
	Branch    string `json:"branch,omitempty"`
}

func taskPathRun(ctx context.Context, opts *TaskPathOptions) error {
	f := opts.F
	p, err := lookupTaskPath(ctx, f, opts.ID)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(p)
	}
	_, err = fmt.Fprintln(f.IO.Out, p.Dir)
	return err
}

func lookupTaskPath(ctx context.Context, f *Factory, id string) (taskPath, error) {
	client, err := f.ReadClient(ctx)
	if err != nil {
		return taskPath{}, err
	}
	t, err := client.GetTask(ctx, id)
	if err != nil {
		return taskPath{}, err
	}
	dir, err := t.WorkDir()
	if err != nil {
		return taskPath{}, err
	}
	p := taskPath{TaskID: t.ID, Dir: dir, Workspace: "shared"}
	if ws := t.Workspace; ws != nil {
		p.Workspace, p.Branch = ws.Mode, ws.Branch
	}
	return p, nil
}

// TaskShellOptions are `task shell`'s inputs.
type TaskShellOptions struct {
	F  *Factory
	ID string
	// Command runs instead of an interactive shell (after --).
	Command []string
}

// NewCmdTaskShell builds `kandev task shell`.
func NewCmdTaskShell(f *Factory, runF func(*TaskShellOptions) error) *cobra.Command {
	opts := &TaskShellOptions{F: f}
	c := &cobra.Command{
		Use:   "shell ID [-- COMMAND...]",
		Short: "Open a shell in the directory a task works in",
		Long: `Open your shell ($SHELL, else /bin/sh) in the directory a task's agent
works in (see kandev task path), with KANDEV_TASK set to the task's id.
Given a command after --, run it there instead. The exit status is the
shell's (or the command's). The TUI's S key does the same.`,
		Example: `  kandev task shell 7k7rsa
  kandev task shell 7k7rsa -- git log --oneline -3`,
		Args: func(c *cobra.Command, args []string) error {
			if n := c.ArgsLenAtDash(); n == 1 || (n < 0 && len(args) == 1) {
				return nil
			}
			return usagef("%s takes one task ID, then optionally -- and a command", c.CommandPath())
		},
		Annotations: map[string]string{rawStreams: "1"},
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			opts.Command = args[1:]
			if runF != nil {
				return runF(opts)
			}
			return taskShellRun(c.Context(), opts)
		},
	}
	return c
}

// ShellExit carries the exit status of the shell `task shell` ran, which
// becomes kandev's own; nothing more is printed.
type ShellExit struct{ Code int }

func (e *ShellExit) Error() string { return fmt.Sprintf("the shell exited with status %d", e.Code) }

func taskShellRun(ctx context.Context, opts *TaskShellOptions) error {
	f := opts.F
	p, err := lookupTaskPath(ctx, f, opts.ID)
	if err != nil {
		return err
	}
	argv := opts.Command
	if len(argv) == 0 {
		argv = strings.Fields(cmp.Or(f.Getenv("SHELL"), "/bin/sh"))
	}
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.Dir = p.Dir
	c.Env = append(c.Environ(), "KANDEV_TASK="+p.TaskID)
	c.Stdin, c.Stdout, c.Stderr = f.IO.In, f.IO.Out, f.IO.ErrOut
	if len(opts.Command) == 0 && !f.JSON {
		fmt.Fprintf(f.IO.ErrOut, "Shell in %s (task %s); exit it to come back\n", p.Dir, p.TaskID)
	}
	err = c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return &ShellExit{Code: ee.ExitCode()}
	}
	if err != nil {
		return fmt.Errorf("run %s in %s: %w", argv[0], p.Dir, err)
	}
	return nil
}
