package tui_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

func TestMain(m *testing.M) { daemontest.Main(m) }

// tmuxSession drives the real kandev binary in a detached tmux session:
// keys go in with send-keys, the screen comes back with capture-pane.
type tmuxSession struct {
	t    *testing.T
	sock string
	env  []string
	d    *daemontest.Daemon
}

func needTmux(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "" {
			t.Skip("tmux is not installed (CI installs it; this test then runs)")
		}
		t.Fatal("tmux is required in CI: " + err.Error())
	}
}

func startTmux(t *testing.T, d *daemontest.Daemon, w, h int, extraEnv ...string) *tmuxSession {
	t.Helper()
	return startTmuxIn(t, d, "", w, h, extraEnv...)
}

// startTmuxIn starts kandev in cwd (a temp dir when empty).
func startTmuxIn(t *testing.T, d *daemontest.Daemon, cwd string, w, h int, extraEnv ...string) *tmuxSession {
	t.Helper()
	dir, err := os.MkdirTemp("", "kt-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if cwd == "" {
		cwd = dir
	}
	s := &tmuxSession{t: t, sock: filepath.Join(dir, "tmux.sock"), d: d}
	s.env = append(append(os.Environ(), d.Env...), extraEnv...)
	// The shell keeps the pane open after kandev exits, so a crash shows.
	// CI is unset for kandev: it runs in tmux as in a person's terminal,
	// and termenv takes a set CI for "no terminal" (no colour at all).
	envArgs := strings.Join(quoteAll(append(d.Env, extraEnv...)), " ")
	script := fmt.Sprintf("env -u CI %s %s; echo \"kandev exited with status $?\"; sleep 600", envArgs, shellQuote(d.Bin))
	// kandev starts in the temp dir, not the package directory: tasks
	// the UI creates work in its directory, and in the repository they
	// would leave a worktree and a kandev/* branch behind in it.
	s.tmux("new-session", "-d", "-s", "kandev", "-c", cwd, "-x", fmt.Sprint(w), "-y", fmt.Sprint(h), "sh", "-c", script)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", s.sock, "kill-server").Run() })
	return s
}

func (s *tmuxSession) tmux(args ...string) string {
	s.t.Helper()
	cmd := exec.Command("tmux", append([]string{"-S", s.sock, "-f", os.DevNull}, args...)...)
	cmd.Env = s.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (s *tmuxSession) screen() string { return s.tmux("capture-pane", "-p", "-t", "kandev") }

// keys sends tmux key names (Enter, Escape, Tab, j, ...).
func (s *tmuxSession) keys(keys ...string) {
	s.t.Helper()
	for _, k := range keys {
		s.tmux("send-keys", "-t", "kandev", k)
		time.Sleep(40 * time.Millisecond)
	}
}

// text types literally.
func (s *tmuxSession) text(txt string) {
	s.t.Helper()
	s.tmux("send-keys", "-t", "kandev", "-l", txt)
	time.Sleep(40 * time.Millisecond)
}

// waitFor polls the screen until cond holds.
func (s *tmuxSession) waitFor(what string, cond func(screen string) bool) string {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		scr := s.screen()
		if cond(scr) {
			return scr
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("timed out waiting for %s; screen:\n%s\ndaemon log:\n%s", what, scr, s.d.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *tmuxSession) waitText(want ...string) string {
	s.t.Helper()
	return s.waitFor(fmt.Sprintf("%q", want), func(scr string) bool {
		for _, w := range want {
			if !strings.Contains(scr, w) {
				return false
			}
		}
		return true
	})
}

// row is a task's tree row on the screen: the id column is followed by
// the profile and the age (the detail pane's header has "id · status").
func row(scr, id string) string {
	re := regexp.MustCompile(`^.*\s` + regexp.QuoteMeta(id) + `\s+\S+\s+\d+[smhd]`)
	for _, l := range strings.Split(scr, "\n") {
		if m := re.FindString(l); m != "" {
			return m
		}
	}
	return ""
}

func (s *tmuxSession) waitRow(id string, want ...string) string {
	s.t.Helper()
	return s.waitFor(fmt.Sprintf("row %s with %q", id, want), func(scr string) bool {
		r := row(scr, id)
		if r == "" {
			return false
		}
		for _, w := range want {
			if !strings.Contains(r, w) {
				return false
			}
		}
		return true
	})
}

// rowIDs are the ids of the tree's rows on the screen, in order, and the
// selected one's.
func rowIDs(scr string) (ids []string, selected string) {
	re := regexp.MustCompile(`^(.).*\s(\S+)\s+\S+\s+\d+[smhd]`)
	for _, l := range strings.Split(scr, "\n") {
		if m := re.FindStringSubmatch(l); m != nil {
			ids = append(ids, m[2])
			if m[1] == ">" {
				selected = m[2]
			}
		}
	}
	return ids, selected
}

// selectRow moves the cursor onto the task's row. It counts the rows
// between the selected one and the target on one screen and sends that
// many moves, then waits for the target to be selected: checking the
// screen between keys missed the target when the UI lagged behind them.
func (s *tmuxSession) selectRow(id string) {
	s.t.Helper()
	ids, cur := rowIDs(s.screen())
	from, to := slices.Index(ids, cur), slices.Index(ids, id)
	if from < 0 || to < 0 {
		s.t.Fatalf("cannot select %s: rows %v, selected %q:\n%s", id, ids, cur, s.screen())
	}
	k, n := "j", to-from
	if n < 0 {
		k, n = "k", -n
	}
	for range n {
		s.keys(k)
	}
	s.waitFor("row "+id+" selected", func(scr string) bool { return strings.HasPrefix(row(scr, id), ">") })
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = shellQuote(s)
	}
	return out
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func createTask(t *testing.T, d *daemontest.Daemon, in api.CreateTaskInput) core.Task {
	t.Helper()
	return d.CreateTask(t, in)
}

// colorSGR matches escape sequences that set a color (not bold, faint,
// reverse or the default-color resets).
var colorSGR = regexp.MustCompile(`\x1b\[[0-9;]*(3[0-7]|38;[0-9;]+|4[0-7]|48;[0-9;]+|9[0-7]|10[0-7])m`)

// TestTmuxDemoScenario runs the demo's scenario as a new user would, in a
// real terminal: the tree fills live, autopilot badges, a pending parent
// question on a child and a user question on a normal task; the user
// question is answered from the UI and the agent continues; a running
// child is stopped; then the terminal grows to 200×50 and the daemon
// restarts under the UI, which says so and reconnects.
func TestTmuxDemoScenario(t *testing.T) {
	needTmux(t)
	d := daemontest.Start(t)
	s := startTmux(t, d, 80, 24, "NO_COLOR=1")
	s.waitText("● live", "0 tasks")

	root := createTask(t, d, api.CreateTaskInput{Title: "Ship the release", Autopilot: true})
	s.waitRow(root.ID, "Ship the release", "AUTO")
	asker := createTask(t, d, api.CreateTaskInput{Title: "Pick the login colour", ParentID: root.ID, Autopilot: true, Start: true,
		Prompt: `mock: call ask_parent_question_kandev {"questions":[{"prompt":"Which colour?"}]}`})
	hanger := createTask(t, d, api.CreateTaskInput{Title: "Run the long build", ParentID: root.ID, Start: true, Prompt: "mock: hang"})
	normal := createTask(t, d, api.CreateTaskInput{Title: "Choose the database", Start: true,
		Prompt: "mock: call ask_user_question_kandev {\"questions\":[{\"prompt\":\"Which DB?\",\"options\":[{\"label\":\"sqlite\"},{\"label\":\"postgres\"}]}]}\nmock: say going with the answer"})

	scr := s.waitRow(asker.ID, "AUTO", "?parent")
	s.waitRow(normal.ID, "?you")
	if r := row(scr, hanger.ID); !strings.Contains(r, "└─") || strings.Contains(r, "AUTO") {
		t.Fatalf("the hanging child should sit under the root without AUTO: %q\n%s", r, scr)
	}
	s.waitText("?you 1", "?parent 1")
	if esc := s.tmux("capture-pane", "-p", "-e", "-t", "kandev"); colorSGR.MatchString(esc) {
		t.Fatalf("NO_COLOR is set but the screen has color: %q", colorSGR.FindString(esc))
	}

	// Answer the user question from the UI; the agent continues.
	s.keys("w")
	s.waitFor("the asking task selected", func(scr string) bool { return strings.HasPrefix(row(scr, normal.ID), ">") })
	s.keys("a")
	s.waitText("Answer task "+normal.ID, "Which DB?", "2) postgres")
	s.keys("2", "Enter")
	s.waitText("answered question", "the agent continues")
	s.waitText("?you 0")
	daemontest.Eventually(t, 20*time.Second, "the agent to continue after the answer", func() bool {
		return agentSaid(t, d, normal.ID, "going with the answer")
	})
	if r := row(s.screen(), normal.ID); strings.Contains(r, "?you") {
		t.Fatalf("the answered task still shows ?you: %q", r)
	}
	tk, err := d.Client.GetTask(context.Background(), normal.ID)
	if err != nil || tk.PendingQuestion != nil {
		t.Fatalf("engine still has a pending question: %+v %v", tk.PendingQuestion, err)
	}

	// Stop the running child, with confirmation. While it runs, its
	// detail says how long the turn has run.
	s.selectRow(hanger.ID)
	s.waitText("running · this turn ")
	s.keys("s")
	s.waitText("Stop task " + hanger.ID + "?")
	s.keys("y")
	s.waitText("stopped task " + hanger.ID)
	s.waitRow(hanger.ID, "STOPPED")
	s.waitText("stopped by person:operator")
	tk, err = d.Client.GetTask(context.Background(), hanger.ID)
	if err != nil || !tk.Halted || tk.Session == nil || tk.Session.State != core.SessionCancelled {
		t.Fatalf("engine state after stop: %+v %v", tk, err)
	}

	// The root's agent left its child's question unanswered, so the root
	// came to you: the child's question is yours to answer in its place,
	// from the child's row too (ADR 0069).
	s.waitRow(root.ID, "ESCALATED")
	s.selectRow(asker.ID)
	s.keys("a")
	s.waitText("Answer task "+asker.ID+"'s question to task "+root.ID, "Which colour?")
	s.keys("Escape")

	// A bigger terminal: panes side by side, everything still in place.
	s.tmux("resize-window", "-t", "kandev", "-x", "200", "-y", "50")
	scr = s.waitFor("the wide layout", func(scr string) bool {
		lines := strings.Split(strings.TrimRight(scr, "\n"), "\n")
		return len(lines) >= 45 && strings.Contains(lines[0], "│")
	})
	for _, id := range []string{root.ID, asker.ID, hanger.ID, normal.ID} {
		if row(scr, id) == "" {
			t.Fatalf("row %s missing at 200×50:\n%s", id, scr)
		}
	}
	if r := row(scr, asker.ID); !strings.Contains(r, "?parent") || !strings.Contains(r, "AUTO") {
		t.Fatalf("badges at 200×50: %q", r)
	}

	// The daemon is stopped (kandev daemon stop): the UI says so and does
	// not start another by itself (issue 22); R starts it, and the UI
	// follows the new stream.
	d.Stop()
	s.waitText("the daemon stopped", "R starts it again")
	s.waitText("(try 2,") // it looked again and still started none
	if _, err := d.Client.Version(context.Background()); err == nil {
		t.Fatal("a daemon answers: the UI started one by itself")
	}
	s.keys("R")
	s.waitText("● live", "reconnected to the daemon")
	t.Cleanup(func() { stopSpawnedDaemon(t, d) })
	late := createTask(t, d, api.CreateTaskInput{Title: "Created after the restart"})
	s.waitRow(late.ID, "Created after the restart")

	s.keys("q")
	s.waitText("kandev exited with status 0")
}

// TestTmuxNewTaskAndMessage creates a task from the UI (with an engine
// refusal shown inline first) and messages it.
func TestTmuxNewTaskAndMessage(t *testing.T) {
	needTmux(t)
	d := daemontest.Start(t)
	d.MustRun("profile", "add", "plain", "--command", "true", "--no-mcp")
	// Tall enough that the three-line reply stays in view above the notes
	// that follow the turn.
	s := startTmux(t, d, 80, 34) // room for the spend line a turn's estimate adds (ADR 0077)
	s.waitText("● live", "0 tasks")

	s.keys("n")
	s.waitText("New task", "‹ default ›")
	s.text("Greeter")
	s.keys("Tab")
	s.text("mock: say hello from the tui")
	// Autopilot on a profile without MCP: the engine refuses, inline.
	s.keys("Tab", "Tab")
	for i := 0; i < 8 && !strings.Contains(s.screen(), "‹ plain ›"); i++ {
		s.keys("Right")
	}
	s.keys("Tab", "Space", "Enter")
	s.waitText("refused", "autopilot")
	// Back to the default profile, without autopilot: created and started,
	// on the profile the daemon picks (mock: no agent CLI is installed
	// here, and none is configured).
	s.keys("Up")
	for i := 0; i < 8 && !strings.Contains(s.screen(), "‹ default ›"); i++ {
		s.keys("Right")
	}
	s.keys("Down", "Space", "Enter")
	s.waitText("created task", "agent › hello from the tui")

	// A message of several lines: ctrl+j and alt+enter break lines, enter
	// sends; the agent gets every line (one directive each).
	s.keys("m")
	s.waitText("Message task", "alt+enter/ctrl+j new line")
	s.text("mock: say second turn")
	s.keys("C-j")
	s.text("mock: say one more line")
	s.keys("M-Enter")
	s.text("mock: say and a last one")
	s.waitText("> mock: say second turn", "  mock: say one more line", "  mock: say and a last one")
	s.keys("Enter")
	// The agent's reply is one entry of three lines (the prompt's own
	// lines still carry their "mock: say").
	s.waitFor("the agent's three lines", func(scr string) bool {
		got := map[string]bool{}
		for _, l := range strings.Split(scr, "\n") {
			got[strings.TrimSpace(l)] = true
		}
		return strings.Contains(scr, "agent › second turn") && got["one more line"] && got["and a last one"]
	})
	tasks, err := d.Client.ListTasks(context.Background(), api.ListTasksInput{})
	if err != nil || len(tasks) != 1 {
		t.Fatalf("tasks %+v %v", tasks, err)
	}
	if !promptSent(t, d, tasks[0].ID, "mock: say second turn\nmock: say one more line\nmock: say and a last one") {
		t.Fatal("the engine did not get the message's three lines as one prompt")
	}
	if !agentSaid(t, d, tasks[0].ID, "second turn\none more line\nand a last one") {
		t.Fatal("the agent did not run the three directives")
	}
	s.keys("q")
	s.waitText("kandev exited with status 0")
}

// TestTmuxHandOnAndDone: a task whose turn ends without a handoff comes
// back to the operator (@you, no ESCALATED: ADR 0025); from the UI it is handed back
// to its role with a message the agent acts on, then, back with the
// operator again, signed off as done. An illegal status move is refused
// in the dialog, naming both states.
func TestTmuxHandOnAndDone(t *testing.T) {
	needTmux(t)
	d := daemontest.Start(t)
	s := startTmux(t, d, 80, 30)
	s.waitText("● live", "0 tasks")

	task := createTask(t, d, api.CreateTaskInput{Title: "Write the changelog", Start: true, Prompt: "mock: say done"})
	s.waitRow(task.ID, "@you")
	tk, err := d.Client.GetTask(context.Background(), task.ID)
	if err != nil || tk.Assignee == nil || *tk.Assignee != (core.Ref{Kind: "person", Name: core.Operator}) || !tk.YourTurn || !tk.BackToYou() {
		t.Fatalf("engine state after the stall: %+v %v", tk.Assignee, err)
	}
	if tk.HandedBy == nil || *tk.HandedBy != (core.Ref{Kind: "role", Name: "mock"}) {
		t.Fatalf("handed by %+v, want role mock", tk.HandedBy)
	}

	// Hand it back to its role with a message; the agent continues.
	s.keys("w")
	s.waitFor("the task back to you selected", func(scr string) bool { return strings.HasPrefix(row(scr, task.ID), ">") })
	s.keys("o")
	s.waitText("Hand on task "+task.ID, "handed over by role mock", "> back     → role mock, who handed it over", "operator person · you · has it now")
	s.keys("Enter")
	s.text("mock: say continuing")
	s.waitText("> message  mock: say continuing")
	s.keys("Enter")
	s.waitText("handed task " + task.ID + " to role mock; its agent runs")
	daemontest.Eventually(t, 20*time.Second, "the agent to continue after the handoff", func() bool {
		return agentSaid(t, d, task.ID, "continuing")
	})
	s.waitText("agent › continuing")
	if !promptSent(t, d, task.ID, "mock: say continuing") {
		t.Fatal("the agent did not get the handoff's message")
	}

	// Its turn ends without a handoff again: back with the operator.
	s.waitRow(task.ID, "@you")

	// Sign it off.
	s.keys("d")
	s.waitText("Mark task "+task.ID+" done?", "> 4) ✓ done", "halt a running agent")
	s.keys("y")
	s.waitText("task " + task.ID + ": todo → ✓ done")
	s.waitRow(task.ID, "✓ Write the changelog")
	tk, err = d.Client.GetTask(context.Background(), task.ID)
	if err != nil || tk.Status != core.StatusDone || tk.YourTurn {
		t.Fatalf("engine state after done: status %s your turn %v, %v", tk.Status, tk.YourTurn, err)
	}

	// The engine refuses done → review; the dialog shows it.
	s.keys("d")
	s.waitText("Mark task " + task.ID + " done?")
	s.keys("3", "Enter")
	s.waitText("refused", "cannot move a task from done to review")
	s.keys("Escape")
	tk, err = d.Client.GetTask(context.Background(), task.ID)
	if err != nil || tk.Status != core.StatusDone {
		t.Fatalf("status after the refusal: %s %v", tk.Status, err)
	}

	s.keys("q")
	s.waitText("kandev exited with status 0")
}

func agentSaid(t *testing.T, d *daemontest.Daemon, id, text string) bool {
	for _, m := range d.Conversation(t, id) {
		if m.Kind == core.MsgAgent && strings.Contains(m.Text, text) {
			return true
		}
	}
	return false
}

// promptSent: a prompt the task's agent got carries text (the engine may
// wrap it, e.g. in a handoff note).
func promptSent(t *testing.T, d *daemontest.Daemon, id, text string) bool {
	for _, m := range d.Conversation(t, id) {
		if m.Kind == core.MsgPrompt && strings.Contains(m.Text, text) {
			return true
		}
	}
	return false
}

// stopSpawnedDaemon ends the daemon the UI started when it reconnected.
func stopSpawnedDaemon(t *testing.T, d *daemontest.Daemon) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	v, err := d.Client.Version(ctx)
	if err != nil || v.PID == 0 {
		return
	}
	_ = syscall.Kill(v.PID, syscall.SIGTERM)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if syscall.Kill(v.PID, 0) != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("the daemon the UI started (pid %d) did not stop", v.PID)
}
