package daemon_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// These tests hold kandev's rules against agents that behave like the real
// CLIs do (issue 15): the mock agent is taught each quirk with a
// KANDEV_MOCK_* switch or a directive, and everything runs through the real
// binary, daemon, kandev mcp and mock agent processes.

// An agent that answers kandev's own session/cancel with a JSON-RPC error
// (Qwen Code: -32603 "Request was aborted") had its turn cancelled, not
// failed: --interrupt delivers its text as the next turn, in the same run.
func TestInterruptAgentThatAnswersCancelWithError(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_MOCK_CANCEL=error"))
	task := create(t, d, api.CreateTaskInput{Title: "busy", Start: true, Prompt: "mock: say working\nmock: hang"})
	waitSaid(t, d, task.ID, "working")
	running := waitState(t, d, task.ID, core.SessionRunning)

	d.MustRun("task", "message", task.ID, "--interrupt", "mock: say after the interrupt")
	waitSaid(t, d, task.ID, "after the interrupt")
	got := get(t, d, task.ID)
	if got.Session == nil || got.Session.ID != running.Session.ID || got.Session.State == core.SessionFailed {
		t.Fatalf("the interrupt must keep the run: before %+v, after %+v", running.Session, got.Session)
	}
	var ends []string
	for _, m := range conversation(t, d, task.ID) {
		if m.Kind == core.MsgTurnEnd {
			ends = append(ends, metaField(m, "stop_reason"))
		}
	}
	if len(ends) < 1 || ends[0] != "cancelled" {
		t.Fatalf("the interrupted turn must end cancelled, turn ends: %q", ends)
	}

	// The session stays usable: the agent's own session goes on (the turn
	// ended without a handoff, so the task may have changed hands and the
	// run with it; the next run resumes the same agent session).
	d.MustRun("task", "message", task.ID, "mock: say still here")
	waitSaid(t, d, task.ID, "still here")
	for _, m := range conversation(t, d, task.ID) {
		if m.Kind == core.MsgTurnEnd && metaField(m, "stop_reason") == "error" {
			t.Fatalf("a turn failed: %s", m.Text)
		}
	}
	if got := get(t, d, task.ID); got.Session == nil || got.Session.AgentSessionID != running.Session.AgentSessionID {
		t.Fatalf("the agent session did not go on: before %+v, after %+v", running.Session, got.Session)
	}
}

// parentAndChild starts a parent whose agent answers its child's question
// with answer, and an autopilot child running childPrompt.
func parentAndChild(t *testing.T, d *daemontest.Daemon, childPrompt, answer string) (core.Task, core.Task) {
	t.Helper()
	parent := create(t, d, api.CreateTaskInput{Title: "parent", Start: true, Prompt: strings.Join([]string{
		"mock: on question: " + strings.TrimPrefix(reply("${child_task_id}", answer, "${question_id}"), "mock: "),
		call("create_task_kandev", map[string]any{"title": "child", "autopilot": true, "prompt": childPrompt}),
	}, "\n")})
	var child core.Task
	daemontest.Eventually(t, wait, "the child to be created", func() bool {
		ts, _ := d.Client.ListTasks(context.Background(), api.ListTasksInput{Root: parent.ID})
		if len(ts) == 2 {
			child = ts[1]
			return true
		}
		return false
	})
	return parent, child
}

// historyLine is the child's `mock: history` answer.
func historyLine(t *testing.T, d *daemontest.Daemon, id string) string {
	t.Helper()
	for _, s := range said(t, d, id) {
		if i := strings.Index(s, "history: "); i >= 0 {
			return s[i:]
		}
	}
	return ""
}

// A child that asked its parent keeps its turn until it ends it: kandev's
// cancel comes only after a generous grace, so an agent that loses the
// cancelled turn from its memory (Gemini CLI) still knows its task when the
// answer arrives, and one that answers the cancel with an error (Qwen Code)
// while it keeps talking after asking is not failed.
func TestQuestionTurnEndsByItself(t *testing.T) {
	for _, mode := range []struct{ name, cancel, after string }{
		{"gemini forgets cancelled turns", "forget", "mock: sleep 1500ms"},
		{"qwen keeps talking and errors on cancel", "error", "mock: chatter 1500ms"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			// The grace is the daemon's default, not the harness's short one.
			d := daemontest.Start(t, daemontest.WithEnv("KANDEV_MOCK_CANCEL="+mode.cancel, "KANDEV_QUESTION_TURN_GRACE="))
			_, child := parentAndChild(t, d, askParent("Which colour?")+"\n"+mode.after+"\nmock: say done asking", "mock: history")
			daemontest.Eventually(t, wait, "the child's answer turn", func() bool { return historyLine(t, d, child.ID) != "" })
			h := historyLine(t, d, child.ID)
			if !strings.Contains(h, "You are an agent working task "+child.ID) {
				t.Fatalf("the answer turn lost the task's first prompt: %q", h)
			}
			for _, m := range conversation(t, d, child.ID) {
				if m.Kind == core.MsgTurnEnd && metaField(m, "stop_reason") != "end_turn" {
					t.Fatalf("the child's turns must end by themselves: %s", m.Text)
				}
			}
			if !saidContains(t, d, child.ID, "done asking") {
				t.Fatalf("the asking turn was cut short: %q", said(t, d, child.ID))
			}
		})
	}
}

// When an agent does keep its turn past the grace and answers kandev's
// cancel with an error (Qwen Code), the turn ended for the question: the
// child is not failed and gets its answer.
func TestQuestionGraceCancelAnsweredWithError(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_MOCK_CANCEL=error")) // the harness's grace is 300ms
	_, child := parentAndChild(t, d, askParent("Which colour?")+"\nmock: chatter 1m", "mock: say the parent says blue")
	waitSaid(t, d, child.ID, "the parent says blue")
	found := false
	for _, m := range conversation(t, d, child.ID) {
		if m.Kind == core.MsgTurnEnd && metaField(m, "stop_reason") == "ended_for_question" {
			found = true
		}
		if m.Kind == core.MsgTurnEnd && metaField(m, "stop_reason") == "error" {
			t.Fatalf("a child turn failed: %s", m.Text)
		}
	}
	if !found {
		t.Fatal("the asking turn should have been ended for the question")
	}
}

// Resuming tries session/resume, then session/load, then session/new; a
// failure is recorded once; what session/load replays is not recorded as
// new conversation.
func TestResumeFallsBackAndIgnoresReplay(t *testing.T) {
	for _, mode := range []string{"broken", "load"} {
		t.Run(mode, func(t *testing.T) {
			d := daemontest.Start(t, daemontest.WithEnv("KANDEV_MOCK_RESUME="+mode))
			task := create(t, d, api.CreateTaskInput{Title: "resumable", Start: true,
				Prompt: "mock: say first words\nmock: tool go build ./..."})
			waitSaid(t, d, task.ID, "first words")
			first := waitSettled(t, d, task.ID)
			d.Stop()
			d.Restart()

			d.MustRun("task", "message", task.ID, "mock: history")
			daemontest.Eventually(t, wait, "the resumed turn", func() bool { return historyLine(t, d, task.ID) != "" })
			if h := historyLine(t, d, task.ID); !strings.Contains(h, "turn 2;") || !strings.Contains(h, "You are an agent working task "+task.ID) {
				t.Fatalf("the session was not continued: %q", h)
			}
			got := waitSettled(t, d, task.ID)
			if got.Session == nil || got.Session.ID == first.Session.ID {
				t.Fatalf("expected a new run: %+v", got.Session)
			}
			var fallbacks []string
			for _, m := range conversation(t, d, task.ID) {
				if m.SessionID != got.Session.ID {
					continue
				}
				switch {
				case m.Kind == core.MsgStatus && strings.Contains(m.Text, "failed"):
					fallbacks = append(fallbacks, m.Text)
				case m.Kind == core.MsgAgent && strings.Contains(m.Text, "replayed"),
					m.Kind == core.MsgToolCall && strings.Contains(m.Text, "replayed"):
					t.Fatalf("the session/load replay was recorded as new: %q", m.Text)
				}
			}
			want := 0
			if mode == "broken" {
				want = 1
			}
			if len(fallbacks) != want || (want == 1 && !strings.Contains(fallbacks[0], "session/resume")) {
				t.Fatalf("resume fallbacks recorded: %q, want %d naming session/resume", fallbacks, want)
			}
			if got.Stalled != nil && strings.Contains(got.Stalled.Detail, "replayed") {
				t.Fatalf("the stall quotes replayed words: %q", got.Stalled.Detail)
			}
		})
	}
}

func askUserArgs(prompt string) string {
	b, _ := json.Marshal(map[string]any{"questions": []map[string]any{{"prompt": prompt}}})
	return string(b)
}

// An agent whose MCP client gives up on a blocking ask_user_question_kandev
// without cancelling it (Codex) and ends its turn gets the operator's late
// answer as its next turn, once.
func TestLateAnswerToAbandonedQuestionCall(t *testing.T) {
	d := daemontest.Start(t)
	task := create(t, d, api.CreateTaskInput{Title: "asker", Start: true, Prompt: strings.Join([]string{
		"mock: abandon 500ms ask_user_question_kandev " + askUserArgs("Which database?"),
		"mock: say gave up waiting",
	}, "\n")})
	waitSaid(t, d, task.ID, "gave up waiting")
	q := waitQuestion(t, d, task.ID)
	waitIdle(t, d, task.ID)

	var res api.AnswerResult
	out := d.MustRun("task", "answer", task.ID, "--json", "mock: say got the answer")
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("answer output %q: %v", out, err)
	}
	if res.Status != "answered" || res.Delivered != "next_turn" {
		t.Fatalf("answer %+v: the abandoned call must not take it", res)
	}
	waitSaid(t, d, task.ID, "got the answer")
	waitSettled(t, d, task.ID)
	n := 0
	for _, s := range said(t, d, task.ID) {
		n += strings.Count(s, "got the answer")
	}
	if n != 1 {
		t.Fatalf("the answer arrived %d times: %q", n, said(t, d, task.ID))
	}
	if st := questionStatus(t, d, task.ID, q.ID); st != "answered" {
		t.Fatalf("question %s is %s", q.ID, st)
	}
}

// The asker's own handoff to a person (what its preamble asks for at the
// end of a turn) does not supersede its own pending question: the
// operator's answer is taken, and reaches the agent when the task is back.
func TestOwnHandoffKeepsPendingQuestion(t *testing.T) {
	d := daemontest.Start(t)
	task := create(t, d, api.CreateTaskInput{Title: "asker", Start: true, Prompt: strings.Join([]string{
		"mock: abandon 500ms ask_user_question_kandev " + askUserArgs("Which database?"),
		call("handoff_task_kandev", map[string]any{"to": "operator", "message": "waiting on my question"}),
	}, "\n")})
	q := waitQuestion(t, d, task.ID)
	waitSaid(t, d, task.ID, "result handoff_task_kandev")
	waitSettled(t, d, task.ID)
	if st := questionStatus(t, d, task.ID, q.ID); st != "pending" {
		t.Fatalf("the asker's own handoff made its question %s", st)
	}
	r := d.Run("task", "answer", task.ID, "mock: say got the answer")
	if r.Code != 0 {
		t.Fatalf("answer refused: %s%s", r.Stdout, r.Stderr)
	}
	// The answer hands the task back to its asker (issue 21) and is the
	// first thing its agent reads; a message then is the next turn.
	d.MustRun("task", "message", task.ID, "mock: say back again")
	waitSaid(t, d, task.ID, "back again")
	if !saidContains(t, d, task.ID, "got the answer") {
		t.Fatalf("the answer never reached the agent: %q", said(t, d, task.ID))
	}
}

// A tool call an agent announces only in its permission request (Qwen
// Code) is recorded under the request's title, not as a bare call id.
func TestPermissionOnlyToolCallKeepsTitle(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_PERMISSION=allow"))
	task := create(t, d, api.CreateTaskInput{Title: "tools", Start: true, Prompt: "mock: permitted rm -rf build\nmock: say done"})
	waitSaid(t, d, task.ID, "done")
	var calls []string
	for _, m := range conversation(t, d, task.ID) {
		if m.Kind == core.MsgToolCall {
			calls = append(calls, m.Text)
		}
	}
	if len(calls) != 1 || calls[0] != "rm -rf build [completed]" {
		t.Fatalf("tool calls recorded: %q", calls)
	}
}

// A profile's own start timeout replaces the daemon-wide one: an agent
// slower than the daemon's default starts under a profile that allows it.
func TestProfileStartTimeout(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_AGENT_START_TIMEOUT=1s", "KANDEV_MOCK_INIT_DELAY=3s"))
	d.MustRun("profile", "add", "slow", "--command", d.Bin, "--arg", "mock-agent", "--start-timeout", "2m")
	var p core.Profile
	if err := json.Unmarshal([]byte(d.MustRun("profile", "show", "slow", "--json")), &p); err != nil {
		t.Fatal(err)
	}
	if p.StartTimeout != "2m0s" {
		t.Fatalf("stored start timeout %q", p.StartTimeout)
	}
	slow := create(t, d, api.CreateTaskInput{Title: "slow", Profile: "slow", Start: true, Prompt: "mock: say started slowly"})
	quick := create(t, d, api.CreateTaskInput{Title: "default", Start: true, Prompt: "mock: say never"})
	waitSaid(t, d, slow.ID, "started slowly")
	// The same agent under the daemon's (shortened) default does not start.
	daemontest.Eventually(t, wait, "the default profile's start to time out", func() bool {
		for _, m := range conversation(t, d, quick.ID) {
			if m.Kind == core.MsgStatus && strings.Contains(m.Text, "did not answer in time") {
				return true
			}
		}
		return false
	})
	if r := d.Run("profile", "add", "bad", "--command", d.Bin, "--start-timeout", "soon"); r.Code == 0 {
		t.Fatal("an invalid start timeout was accepted")
	}
}

// The same while the turn goes on: once the agent reported the call
// failed, the call no longer takes the answer, which waits for the turn's
// end and then arrives, once.
func TestAnswerAfterAgentReportedQuestionCallFailed(t *testing.T) {
	d := daemontest.Start(t)
	task := create(t, d, api.CreateTaskInput{Title: "asker", Start: true, Prompt: strings.Join([]string{
		"mock: abandon 500ms ask_user_question_kandev " + askUserArgs("Which database?"),
		"mock: say gave up waiting",
		"mock: hang",
	}, "\n")})
	// Notifications are recorded in order: the failed call is seen first.
	waitSaid(t, d, task.ID, "gave up waiting")
	waitQuestion(t, d, task.ID)
	var res api.AnswerResult
	if err := json.Unmarshal([]byte(d.MustRun("task", "answer", task.ID, "--json", "mock: say got the answer")), &res); err != nil {
		t.Fatal(err)
	}
	if res.Delivered != "next_turn" {
		t.Fatalf("answer %+v: the failed call must not take it", res)
	}
	d.MustRun("task", "message", task.ID, "--interrupt", "mock: say moving on")
	waitSaid(t, d, task.ID, "moving on")
	n := 0
	for _, s := range said(t, d, task.ID) {
		n += strings.Count(s, "got the answer")
	}
	if n != 1 {
		t.Fatalf("the answer arrived %d times: %q", n, said(t, d, task.ID))
	}
}

// An agent that refuses session/new until the client authenticates, even
// with its key in the environment (Codex's codex-acp: "Authentication
// required", env_var methods naming CODEX_API_KEY and OPENAI_API_KEY):
// where the key is set kandev authenticates with that method and the
// session opens, saying so in the run's start note; where it is not, the
// start fails with the agent's own refusal.
func TestAgentThatNeedsAuthenticateWithItsKey(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_MOCK_AUTH=env:MOCK_API_KEY", "MOCK_API_KEY=sk-offline"))
	task := create(t, d, api.CreateTaskInput{Title: "keyed", Start: true, Prompt: "mock: say opened"})
	logTaskOnFailure(t, d, task.ID, nil)
	waitSaid(t, d, task.ID, "opened")
	noted := false
	for _, m := range conversation(t, d, task.ID) {
		if m.Kind == core.MsgStatus && strings.Contains(m.Text, "authenticated with mock-api-key") {
			noted = true
		}
	}
	if !noted {
		t.Fatal("the start note does not say the run authenticated")
	}

	keyless := daemontest.Start(t, daemontest.WithEnv("KANDEV_MOCK_AUTH=env:MOCK_API_KEY"))
	task = create(t, keyless, api.CreateTaskInput{Title: "keyless", Start: true, Prompt: "mock: say never"})
	daemontest.Eventually(t, wait, "the start to fail on authentication", func() bool {
		got := get(t, keyless, task.ID)
		return got.Session != nil && got.Session.State == core.SessionFailed && strings.Contains(got.Session.Error, "session/new") && strings.Contains(got.Session.Error, "Authentication required")
	})
}
