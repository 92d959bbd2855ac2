package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
)

// NewCmdRoot builds the command tree.
func NewCmdRoot(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "kandev",
		Short: "Coordinate a team of AI coding agents from the terminal",
		Long: `kandev runs agent CLIs (Claude Code, Codex, Gemini CLI, Qwen Code, OpenCode) on a tree
of tasks, gives each agent kandev's MCP tools to delegate, ask and steer, and shows the
live tree in a terminal UI. Run kandev with no arguments for the UI.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version,
		Args:          cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runTUI(c.Context(), f)
		},
		Annotations: map[string]string{rawStreams: "1"},
		PersistentPreRunE: func(c *cobra.Command, args []string) error {
			f.cleanText(c)
			return nil
		},
	}
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.PersistentFlags().StringVar(&f.Home, "home", "", "kandev home directory (default $KANDEV_HOME, else $XDG_DATA_HOME/kandev, else ~/.local/share/kandev)")
	root.PersistentFlags().BoolVar(&f.JSON, "json", false, "print JSON instead of text")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &UsageError{Err: err}
	})
	root.AddCommand(
		NewCmdTask(f),
		NewCmdIssues(f, nil),
		NewCmdWorktree(f),
		NewCmdProfile(f),
		NewCmdRole(f),
		NewCmdPerson(f),
		NewCmdHost(f),
		NewCmdWait(f, nil),
		NewCmdServe(f, nil),
		NewCmdDaemon(f),
		NewCmdStatus(f, nil),
		NewCmdWeb(f),
		NewCmdUsage(f, nil),
		NewCmdLimit(f),
		NewCmdDoctor(f, nil),
		NewCmdConfig(f),
		NewCmdEvents(f, nil),
		NewCmdVersion(f, nil),
		NewCmdMCP(f, nil),
		NewCmdMockAgent(f, nil),
		NewCmdSandboxForward(f, nil),
		NewCmdKubeRelay(f, nil),
		NewCmdImage(f),
		NewCmdDemo(f, nil),
	)
	groupCommands(root)
	registerCompletions(f, root)
	return root
}

// groupCommands sorts the commands of `kandev --help` by what they are
// for: what a person runs every day first, the plumbing agents and
// service managers run last.
func groupCommands(root *cobra.Command) {
	groups := []struct{ id, title string }{
		{"daily", "Daily:"}, {"tasks", "Tasks:"}, {"workspace", "Workspace:"}, {"setup", "Setup:"},
		{"plumbing", "Plumbing (run by agents and service managers):"},
	}
	for _, g := range groups {
		root.AddGroup(&cobra.Group{ID: g.id, Title: g.title})
	}
	of := map[string]string{
		"status": "daily", "wait": "daily", "events": "daily", "usage": "daily", "web": "daily", "limit": "daily", "demo": "setup",
		"task": "tasks", "issues": "tasks",
		"worktree": "workspace", "host": "workspace",
		"profile": "setup", "image": "setup", "role": "setup", "person": "setup", "config": "setup", "doctor": "setup",
		"daemon": "setup", "version": "setup",
		"mcp": "plumbing", "serve": "plumbing", "mock-agent": "plumbing", "sandbox-forward": "plumbing",
		"kube-relay": "plumbing",
	}
	for _, c := range root.Commands() {
		if id, ok := of[c.Name()]; ok {
			c.GroupID = id
		}
	}
	root.SetHelpCommandGroupID("setup")
	root.SetCompletionCommandGroupID("setup")
}

// Main runs kandev and returns the exit code.
func Main() int {
	f := NewFactory()
	root := NewCmdRoot(f)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd, err := root.ExecuteContextC(ctx)
	err = classify(err)
	var we *WaitExit
	var se *ShellExit
	if err != nil && !errors.As(err, &we) && !errors.As(err, &se) {
		printError(f, cmd, err)
	}
	f.flushText()
	return ExitCode(err)
}

// classify marks cobra's own argument errors as usage errors, once, so the
// message and the exit code agree.
func classify(err error) error {
	var ue *UsageError
	if err != nil && !errors.As(err, &ue) && isCobraUsage(err) {
		return &UsageError{Err: err}
	}
	return err
}

func printError(f *Factory, c *cobra.Command, err error) {
	var ue *UsageError
	if f.JSON {
		_ = f.printJSONLine(f.IO.ErrOut, map[string]any{"error": core.AsError(unwrapUsage(err))})
		return
	}
	fmt.Fprintln(f.IO.ErrOut, "kandev: "+err.Error())
	if errors.As(err, &ue) && c != nil {
		fmt.Fprintf(f.IO.ErrOut, "Run '%s --help' for usage.\n", c.CommandPath())
	}
}

func unwrapUsage(err error) error {
	var ue *UsageError
	if errors.As(err, &ue) {
		return core.Errorf(core.CodeValidation, "%s", ue.Err.Error())
	}
	return err
}

// isCobraUsage recognises cobra's own argument errors (flag errors go
// through the flag error func already). They are matched by how cobra
// starts them, so a runtime error that merely mentions such words is not
// mistaken for one.
func isCobraUsage(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown command ", "accepts ", "requires at least ", "requires at most ",
		"accepts at most ", "accepts between ", "invalid argument "} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// group builds a command that only holds subcommands: run bare it shows
// help; run with an unknown subcommand it is a usage error.
func group(use, short, long string) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Long: long,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q for %q", args[0], c.CommandPath())
			}
			return c.Help()
		},
	}
}

// exactArgs is cobra.ExactArgs with a usage error that names the arguments.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s takes %s (got %d arguments)", c.CommandPath(), names, len(args))
		}
		return nil
	}
}
