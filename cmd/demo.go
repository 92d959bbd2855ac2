package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon"
	"github.com/kandev/kandev/core/daemonclient"
	"github.com/kandev/kandev/core/workspace"
)

// DemoOptions are `demo`'s inputs.
type DemoOptions struct {
	F       *Factory
	Keep    bool
	Timeout time.Duration
}

// NewCmdDemo builds `kandev demo`.
func NewCmdDemo(f *Factory, runF func(*DemoOptions) error) *cobra.Command {
	opts := &DemoOptions{F: f}
	c := &cobra.Command{
		Use:   "demo",
		Short: "Run a canned scenario with the bundled mock agent in a temporary home",
		Long: `Run a canned scenario with the bundled mock agent in a fresh temporary home: a root task
splits its work into an autopilot subtask and a normal one, answers the autopilot child's
question, signs both off when they hand back, and hands the feature back to you. It needs
no agent CLI and no network. Prints what happens, then the task tree and transcripts, and,
when git is installed, the diff of what the agents wrote in the root task's worktree.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return demoRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.Keep, "keep", false, "keep the temporary home (and print how to open it)")
	c.Flags().DurationVar(&opts.Timeout, "timeout", time.Minute, "give up after this long")
	return c
}

func mockCall(tool string, args map[string]any) string {
	b, _ := json.Marshal(args)
	return "mock: call " + tool + " " + string(b)
}

// demoScript is the root task's prompt: mock directives that make it act
// like a coordinating agent.
func demoScript() string {
	form := strings.Join([]string{
		"Build the login form.",
		"mock: plan Read the spec | Build the form | Hand back for review",
		mockCall("ask_parent_question_kandev", map[string]any{"questions": []map[string]any{{
			"prompt":  "Should the form offer single sign-on?",
			"options": []map[string]any{{"label": "yes"}, {"label": "no", "description": "email and password only"}},
		}}}),
	}, "\n")
	answer := strings.Join([]string{
		"No single sign-on for now: email and password only.",
		"mock: say Understood: building the email and password form.",
		"mock: write login/form.go package login\\n\\n// Form asks for an email and a password.\\ntype Form struct{ Email, Password string }",
		"mock: tool go test ./login/...",
		mockCall("handoff_task_kandev", map[string]any{"to": "back", "message": "Login form done; tests pass."}),
	}, "\n")
	session := strings.Join([]string{
		"Store sessions server-side.",
		"mock: say Adding a session store with expiry.",
		"mock: write session/store.go package session\\n\\n// Store keeps sessions server-side, with an expiry.\\ntype Store struct{}",
		"mock: tool go test ./session/...",
		mockCall("handoff_task_kandev", map[string]any{"to": "back", "message": "Session storage in place; tests pass."}),
	}, "\n")
	on := func(kind, directive string) string {
		return "mock: on " + kind + ": " + strings.TrimPrefix(directive, "mock: ")
	}
	return strings.Join([]string{
		"Ship the login feature.",
		"mock: say I will split this into two subtasks and coordinate them.",
		on("question", mockCall("message_task_kandev", map[string]any{"task_id": "${child_task_id}", "prompt": answer, "reply_to_question_id": "${question_id}"})),
		// Signing a subtask off brings no wake (it is no news to the parent),
		// so the sign-off turn of the last open subtask hands the root back.
		on("handoff", mockCall("set_task_status_kandev", map[string]any{"task_id": "${child_task_id}", "status": "done"})),
		on("handoff", "mock: say Subtask ${child_task_id} is signed off; ${open_subtasks} were open."),
		on("handoff", "mock: if open_subtasks=1: "+strings.TrimPrefix(mockCall("handoff_task_kandev", map[string]any{"to": "back",
			"message": "The login feature is ready for your review: form and session storage are done."}), "mock: ")),
		mockCall("create_task_kandev", map[string]any{"title": "Build the login form", "autopilot": true, "prompt": form}),
		mockCall("create_task_kandev", map[string]any{"title": "Add session storage", "prompt": session}),
	}, "\n")
}

func demoRun(ctx context.Context, opts *DemoOptions) error {
	f := opts.F
	out := f.IO.Out
	dir, err := os.MkdirTemp("", "kandev-demo-")
	if err != nil {
		return err
	}
	home := core.Home{Dir: filepath.Join(dir, "home")}
	work := filepath.Join(dir, "workspace")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	// A git repository, so the tasks work in a worktree and the demo ends
	// with the diff of their work. Without git the demo runs in place.
	repo := initDemoRepo(ctx, work) == nil
	logFile, err := os.Create(filepath.Join(dir, "daemon.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	dctx, stopDaemon := context.WithCancel(context.Background())
	ready := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- daemon.Serve(dctx, daemon.ServeOptions{Home: home, Version: Version, SelfExe: f.Executable,
			Logger: slog.New(slog.NewTextHandler(logFile, nil)), Ready: func() { close(ready) }})
	}()
	defer func() {
		stopDaemon()
		<-errc
		if opts.Keep {
			fmt.Fprintf(f.IO.ErrOut, "\nKept the demo home: KANDEV_HOME=%s kandev\n", home.Dir)
			return
		}
		os.RemoveAll(dir)
	}()
	select {
	case <-ready:
	case err := <-errc:
		errc <- err
		return fmt.Errorf("start the demo daemon: %w", err)
	case <-ctx.Done():
		return ctx.Err()
	}
	client := daemonclient.Dial(home.Socket())
	defer client.Close()
	events, err := client.Events(ctx, api.EventsInput{})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "kandev demo: a coordinating agent and two subtasks, all run by the bundled mock agent\n\n")
	// The scenario is the mock's, whatever agents this machine has.
	root, err := client.CreateTask(ctx, api.CreateTaskInput{Title: "Ship the login feature", CWD: work, Prompt: demoScript(), Start: true,
		Profile: core.DefaultProfile})
	if err != nil {
		return err
	}
	if err := narrate(ctx, out, client, events, root.ID); err != nil {
		return err
	}
	tasks, err := client.ListTasks(ctx, api.ListTasksInput{})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nThe task tree:\n\n")
	writeTree(out, tasks)
	for _, t := range tasks {
		fmt.Fprintf(out, "\n── %s %s ──\n", t.ID, t.Title)
		page, err := client.Conversation(ctx, t.ID, api.ConversationInput{Limit: 1000})
		if err != nil {
			return err
		}
		for _, m := range page.Messages {
			if line := transcriptLine(m); line != "" {
				fmt.Fprintln(out, line)
			}
		}
	}
	if repo {
		d, err := client.TaskDiff(ctx, root.ID, api.DiffInput{Patch: true})
		if err != nil {
			return err
		}
		// The command to see it again only works in a home that stays.
		again := ""
		if opts.Keep {
			again = fmt.Sprintf(" (KANDEV_HOME=%s kandev task diff %s)", home.Dir, root.ID)
		}
		fmt.Fprintf(out, "\nWhat the agents changed, on branch %s%s:\n\n%s\n%s", d.Branch, again, d.Stat, d.Patch)
	}
	fmt.Fprintf(out, "\nThe feature is back with you for review. Try it yourself:\n  kandev task create \"Say hi\" --prompt \"mock: say hi\" --start\n  kandev          # the live tree\n")
	return nil
}

// initDemoRepo makes dir a git repository with one commit.
func initDemoRepo(ctx context.Context, dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# The demo app\n"), 0o644); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"config", "user.name", "kandev demo"},
		{"config", "user.email", "demo@kandev.invalid"},
		{"config", "commit.gpgsign", "false"},
		{"add", "README.md"},
		{"commit", "-q", "-m", "The demo app"},
	} {
		if _, err := workspace.Git(ctx, workspace.GitCall{Dir: dir, Args: args}); err != nil {
			return err
		}
	}
	return nil
}

// narrate prints the scenario as it happens, until the root task comes
// back to the operator.
func narrate(ctx context.Context, out io.Writer, client api.Client, events <-chan core.Event, rootID string) error {
	titles := map[string]string{}
	seen := map[int64]bool{}
	for {
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return core.Errorf(core.CodeInternal, "the demo did not finish in time; run it with --keep and look at the daemon log")
			}
			return ctx.Err()
		case ev, ok := <-events:
			if !ok {
				return core.Errorf(core.CodeUnavailable, "the demo daemon went away")
			}
			switch {
			case ev.Type == core.EventTaskCreated && ev.Task != nil:
				titles[ev.Task.ID] = ev.Task.Title
				mode := ""
				if ev.Task.Autopilot {
					mode = " [autopilot]"
				}
				parent := ""
				if ev.Task.ParentID != "" {
					parent = " under " + ev.Task.ParentID
				}
				fmt.Fprintf(out, "+ %s %q%s%s\n", ev.Task.ID, ev.Task.Title, mode, parent)
			case ev.Type == core.EventMessageAdded && ev.Message != nil && !seen[ev.Message.Seq]:
				seen[ev.Message.Seq] = true
				m := ev.Message
				switch m.Kind {
				case core.MsgQuestion:
					fmt.Fprintf(out, "? %s asks: %s\n", m.TaskID, firstLineOf(m.Text))
				case core.MsgAnswer:
					fmt.Fprintf(out, "! %s got an answer: %s\n", m.TaskID, firstLineOf(m.Text))
				case core.MsgHandoff:
					fmt.Fprintf(out, "→ %s %s\n", m.TaskID, firstLineOf(m.Text))
				case core.MsgStatus:
					if strings.HasPrefix(m.Text, "status:") {
						fmt.Fprintf(out, "✓ %s %s\n", m.TaskID, m.Text)
					}
				}
			case ev.Type == core.EventTaskUpdated && ev.Task != nil && ev.Task.ID == rootID:
				t := ev.Task
				settled := t.Session == nil || !t.Session.State.Live()
				if t.Assignee != nil && t.Assignee.IsPerson() && t.Status == core.StatusReview && settled {
					return nil
				}
			}
		}
	}
}

// transcriptLine renders one entry as a single short line; the mock's
// echo of tool results is left out (the tool call itself shows).
func transcriptLine(m core.Message) string {
	var label string
	switch m.Kind {
	case core.MsgPrompt:
		var meta struct {
			Rendered string `json:"rendered"`
		}
		_ = json.Unmarshal(m.Meta, &meta)
		text := meta.Rendered
		if text == "" {
			text = m.Text
		}
		return "  ▸ " + firstLineOf(strings.NewReplacer("[kandev:task] ", "", "[kandev:message] ", "").Replace(text))
	case core.MsgAgent:
		if strings.HasPrefix(m.Text, "result ") || strings.HasPrefix(m.Text, "error ") {
			return ""
		}
		label = "agent"
	case core.MsgToolCall:
		label = "tool"
	case core.MsgQuestion:
		label = "question"
	case core.MsgAnswer:
		label = "answer"
	case core.MsgHandoff:
		label = "handoff"
	case core.MsgPlan:
		label = "plan"
		return "    plan: " + strings.ReplaceAll(strings.ReplaceAll(m.Text, "[pending] ", ""), "\n", " | ")
	default:
		return ""
	}
	return fmt.Sprintf("    %s: %s", label, firstLineOf(m.Text))
}

func firstLineOf(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "mock:") {
			return truncate(l, 110)
		}
	}
	return ""
}
