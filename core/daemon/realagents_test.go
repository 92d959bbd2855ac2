package daemon_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// Issue 21: what running the real agent CLIs end to end found after issue
// 15's fixes, each quirk taught to the mock agent and each rule held
// through the real binary.

// gitRepo makes a repository with a tracked file in sub/ and an untracked
// directory new/, committed on main.
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	dir := t.TempDir()
	for _, d := range []string{"sub/deep", "new"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "deep", "f.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "new", "local.txt"), []byte("untracked\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.name", "Test"},
		{"config", "user.email", "test@example.com"}, {"add", "sub"}, {"commit", "-q", "-m", "initial"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// A task created in a subdirectory of a repository works in the same
// subdirectory of its worktree: tracked (sub/deep) or not yet in the
// branch (new/, made in the worktree).
func TestSubdirectoryOfRepositoryKeptInWorktree(t *testing.T) {
	repo := gitRepo(t)
	d := daemontest.Start(t)
	for _, rel := range []string{"sub/deep", "new"} {
		task := create(t, d, api.CreateTaskInput{Title: "in " + rel, CWD: filepath.Join(repo, rel), Start: true,
			Prompt: "mock: write here.txt written"})
		waitSaid(t, d, task.ID, "wrote here.txt")
		got := get(t, d, task.ID)
		if got.Workspace == nil || got.Workspace.Dir == "" {
			t.Fatalf("%s: task has no worktree: %+v", rel, got.Workspace)
		}
		want := filepath.Join(got.Workspace.Dir, rel)
		if got.CWD != want {
			t.Errorf("%s: task works in %s, want %s", rel, got.CWD, want)
		}
		if _, err := os.Stat(filepath.Join(want, "here.txt")); err != nil {
			t.Errorf("%s: the agent did not write in %s: %v", rel, want, err)
		}
	}
}

// Qwen Code 0.15 asks before every MCP tool call, titling the request with
// the call's arguments (kind other) and naming the tool only in the
// options' labels. kandev still knows its own tools: with the default
// policy (ask), a normal task's hello-and-handoff asks nobody.
func TestQwenPermissionTitlesKandevToolsAskNobody(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_MOCK_MCP_PERMISSION=qwen"))
	task := create(t, d, api.CreateTaskInput{Title: "hello", Start: true, Prompt: strings.Join([]string{
		"mock: say hello",
		call("handoff_task_kandev", map[string]any{"to": "back", "message": "said hello"}),
	}, "\n")})
	waitSaid(t, d, task.ID, "result handoff_task_kandev")
	got := waitSettled(t, d, task.ID)
	if got.Assignee == nil || !got.Assignee.IsPerson() {
		t.Fatalf("the task was not handed back: assignee %+v", got.Assignee)
	}
	var perms []string
	for _, m := range conversation(t, d, task.ID) {
		if m.Kind == core.MsgQuestion {
			t.Errorf("somebody was asked: %s", m.Text)
		}
		if m.Kind == core.MsgPermission {
			perms = append(perms, m.Text)
		}
	}
	if len(perms) != 1 || !strings.Contains(perms[0], "handoff_task_kandev is kandev's own tool") {
		t.Fatalf("permission entries: %q", perms)
	}
}

// Codex asks permission for a command (the request announces the call,
// pending) and, once approved, announces the same call again as it runs
// it: one tool entry, completed, not a second one stuck at pending.
func TestCodexApprovedCommandIsOneToolEntry(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_PERMISSION=allow"))
	task := create(t, d, api.CreateTaskInput{Title: "run", Start: true, Prompt: "mock: exec go version\nmock: exec ls -la"})
	waitSaid(t, d, task.ID, "exec: ran ls -la")
	waitSettled(t, d, task.ID)
	var calls []string
	for _, m := range conversation(t, d, task.ID) {
		if m.Kind == core.MsgToolCall {
			calls = append(calls, m.Text)
		}
	}
	want := []string{"go version [completed]", "ls -la [completed]"}
	if strings.Join(calls, "|") != strings.Join(want, "|") {
		t.Fatalf("tool entries %q, want %q", calls, want)
	}
}

// An agent whose MCP client gives up on a blocking question (Codex, after
// 120 s) hands the task to the operator, as its preamble asks. The
// operator's answer hands the task back to the agent that asked, and is
// that turn's prompt, once: no message, no `task handoff --to back`, no
// queue item left for a later turn.
func TestAnswerHandsTaskBackToTheAsker(t *testing.T) {
	d := daemontest.Start(t)
	task := create(t, d, api.CreateTaskInput{Title: "asker", Start: true, Prompt: strings.Join([]string{
		"mock: on answer: say the answer started my turn",
		"mock: abandon 300ms ask_user_question_kandev " + askUserArgs("Which database?"),
		call("handoff_task_kandev", map[string]any{"to": "operator", "message": "waiting on my question"}),
	}, "\n")})
	asker := task.Assignee
	q := waitQuestion(t, d, task.ID)
	waitSaid(t, d, task.ID, "result handoff_task_kandev")
	if got := waitSettled(t, d, task.ID); got.Assignee == nil || !got.Assignee.IsPerson() {
		t.Fatalf("the agent's handoff left the task with %+v", got.Assignee)
	}

	var res api.AnswerResult
	if err := json.Unmarshal([]byte(d.MustRun("task", "answer", task.ID, "--json", "postgres")), &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != "answered" {
		t.Fatalf("answer %+v", res)
	}
	waitSaid(t, d, task.ID, "the answer started my turn")
	got := waitSettled(t, d, task.ID)
	if st := questionStatus(t, d, task.ID, q.ID); st != "answered" {
		t.Fatalf("question %s is %s", q.ID, st)
	}
	msgs := conversation(t, d, task.ID)
	var answers, handBacks int
	for _, m := range msgs {
		if m.Kind == core.MsgPrompt && strings.Contains(m.Text, "[kandev:answer]") {
			answers++
			if !strings.Contains(m.Text, "postgres") {
				t.Errorf("the answer's prompt does not carry it: %q", m.Text)
			}
		}
		if m.Kind == core.MsgPrompt && strings.Contains(m.Text, "[kandev:handoff]") {
			t.Errorf("the hand-back queued a notice of its own: %q", m.Text)
		}
		if m.Kind == core.MsgHandoff && strings.Contains(m.Text, "to "+asker.String()) {
			handBacks++
		}
	}
	if answers != 1 || handBacks != 1 {
		t.Fatalf("%d answer prompts and %d hand-backs to %s, want 1 and 1", answers, handBacks, asker)
	}
	if got.Queued != 0 {
		t.Fatalf("%d items left in the queue", got.Queued)
	}
	n := 0
	for _, s := range said(t, d, task.ID) {
		n += strings.Count(s, "the answer started my turn")
	}
	if n != 1 {
		t.Fatalf("the answer's turn ran %d times", n)
	}
}

// A run's end is recorded before its processes are torn down. An agent
// that does not exit when its input closes (Codex, Gemini CLI) outlives a
// daemon killed in between; the next daemon of the home ends it, and its
// setsid helper, though the session's state says it is over.
func TestNoProcessSurvivesCrashInTeardownWindow(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_MOCK_LINGER=1", "KANDEV_FAILPOINT=exit-before-teardown"))
	gate := filepath.Join(t.TempDir(), "gate")
	task := create(t, d, api.CreateTaskInput{Title: "lingers", Start: true, Prompt: strings.Join([]string{
		"mock: spawn-setsid",
		"mock: env KANDEV_SESSION_ID",
		"mock: waitfile " + gate,
		call("handoff_task_kandev", map[string]any{"to": "operator", "message": "done"}),
	}, "\n")})
	var sid string
	daemontest.Eventually(t, wait, "the agent to say its session", func() bool {
		for _, s := range said(t, d, task.ID) {
			for _, line := range strings.Split(s, "\n") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), "env KANDEV_SESSION_ID: "); ok {
					sid = v
					return true
				}
			}
		}
		return false
	})
	t.Cleanup(func() {
		for _, pid := range agent.SessionProcs(sid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	// The handoff ends the run after its turn: its end is recorded, and
	// the daemon exits before the teardown.
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.Exited():
	case <-time.After(wait):
		t.Fatalf("the daemon did not reach the teardown failpoint:\n%s", d.Log())
	}
	if n := len(agent.SessionProcs(sid)); n < 2 {
		t.Fatalf("%d processes of session %s outlived the daemon; the test needs the lingering agent and its helper", n, sid)
	}
	d.SetEnv("KANDEV_FAILPOINT", "")
	d.Restart()
	if got := get(t, d, task.ID); got.Session == nil || got.Session.ID != sid || got.Session.State.Live() {
		t.Fatalf("the session was not recorded ended before the crash: %+v", got.Session)
	}
	sessionGone(t, sid, "restart after a crash in the teardown window")
}

// The startup sweep ends what this home's sessions left, never another
// home's: the marker names the home.
func TestStartupSweepSparesOtherHomes(t *testing.T) {
	a := daemontest.Start(t)
	b := daemontest.Start(t)
	task := create(t, a, api.CreateTaskInput{Title: "busy", Start: true, Prompt: "mock: say busy\nmock: hang"})
	waitSaid(t, a, task.ID, "busy")
	sid := get(t, a, task.ID).Session.ID
	b.Kill9()
	b.Restart()
	if len(agent.SessionProcs(sid)) == 0 {
		t.Fatalf("home %s's start killed session %s of home %s", b.Home.Dir, sid, a.Home.Dir)
	}
	if got := get(t, a, task.ID); got.Session == nil || got.Session.State != core.SessionRunning {
		t.Fatalf("the other home's run was disturbed: %+v", got.Session)
	}
}

// Gemini CLI answers session/load first and streams the history after the
// answer. kandev filters a resumed session's updates until it sends the
// session's first prompt, so the replay is not recorded a second time.
func TestLateLoadReplayIsNotRecorded(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_MOCK_RESUME=load", "KANDEV_MOCK_LATE_REPLAY=1"))
	task := create(t, d, api.CreateTaskInput{Title: "gemini", Start: true, Prompt: "mock: say first turn\nmock: tool go test ./..."})
	waitSaid(t, d, task.ID, "first turn")
	first := waitSettled(t, d, task.ID)
	// The turn ended without a handoff: the task went to the operator and
	// the run ended; a message brings it back, in a new run that loads
	// the agent's session.
	daemontest.Eventually(t, wait, "the first run to end", func() bool {
		s := get(t, d, task.ID).Session
		return s != nil && !s.State.Live()
	})
	message(t, d, task.ID, "mock: history")
	waitSaid(t, d, task.ID, "history: session")
	got := waitSettled(t, d, task.ID)
	if got.Session.ID == first.Session.ID {
		t.Fatal("the second turn ran in the first run; the test needs a load")
	}
	resumed := false
	for _, m := range conversation(t, d, task.ID) {
		if m.Kind == core.MsgStatus && strings.Contains(m.Text, "resumed agent session") {
			resumed = true
		}
		if strings.Contains(m.Text, "replayed") {
			t.Errorf("the replay was recorded: %s %q", m.Kind, m.Text)
		}
	}
	if !resumed {
		t.Fatal("the agent session was not loaded")
	}
	if !saidContains(t, d, task.ID, "turn 2; earlier: ") {
		t.Fatalf("the loaded session lost its history: %q", said(t, d, task.ID))
	}
}

// Qwen Code titles a request for another server's MCP tool with the call's
// arguments: "allow always" is remembered by the tool, so the next call
// with other arguments is allowed without asking again.
func TestAllowAlwaysRemembersMCPToolNotArguments(t *testing.T) {
	d := daemontest.Start(t)
	task := create(t, d, api.CreateTaskInput{Title: "search", Start: true, Prompt: strings.Join([]string{
		`mock: qwenpermission search_docs {"query":"first"}`,
		`mock: qwenpermission search_docs {"query":"second"}`,
		"mock: say searched",
	}, "\n")})
	q := waitQuestion(t, d, task.ID)
	if q.Kind != core.QuestionPermission {
		t.Fatalf("question %+v", q)
	}
	d.MustRun("task", "answer", task.ID, "Always Allow in project: search_docs")
	waitSaid(t, d, task.ID, "searched")
	questions := 0
	for _, m := range conversation(t, d, task.ID) {
		if m.Kind == core.MsgQuestion {
			questions++
		}
	}
	if questions != 1 {
		t.Fatalf("%d permission questions, want 1: the second call was asked again", questions)
	}
	if n := strings.Count(strings.Join(said(t, d, task.ID), "\n"), "permission: proceed_always_project"); n != 2 {
		t.Fatalf("said %q", said(t, d, task.ID))
	}
}
