package daemon_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// call renders a mock directive that calls a kandev tool.
func call(tool string, args map[string]any) string {
	b, _ := json.Marshal(args)
	return "mock: call " + tool + " " + string(b)
}

func askParent(prompt string) string {
	return call("ask_parent_question_kandev", map[string]any{"questions": []map[string]any{{"prompt": prompt}}})
}

func reply(childID, text, qid string) string {
	return call("message_task_kandev", map[string]any{"task_id": childID, "prompt": text, "reply_to_question_id": qid})
}

func waitQuestion(t *testing.T, d *daemontest.Daemon, id string) core.QuestionInfo {
	t.Helper()
	var q *core.QuestionInfo
	daemontest.Eventually(t, wait, "task "+id+" to ask", func() bool {
		q = get(t, d, id).PendingQuestion
		return q != nil
	})
	return *q
}

// questionStatus reads a question's state from the child's conversation.
func questionStatus(t *testing.T, d *daemontest.Daemon, taskID, qid string) string {
	t.Helper()
	for _, m := range conversation(t, d, taskID) {
		if m.Kind == core.MsgQuestion && metaField(m, "question_id") == qid {
			return metaField(m, "status")
		}
	}
	t.Fatalf("question %s not in task %s", qid, taskID)
	return ""
}

// The whole parent-question round trip through real processes: the
// autopilot child asks, the parent is prompted, answers with the question
// id, the child resumes with the answer; a second answer is a no-op.
func TestParentQuestionRoundTrip(t *testing.T) {
	d := daemontest.Start(t)
	parent := create(t, d, api.CreateTaskInput{Title: "parent", Start: true, Prompt: strings.Join([]string{
		"mock: on question: " + strings.TrimPrefix(reply("${child_task_id}", "mock: say the parent says blue", "${question_id}"), "mock: "),
		"mock: on question: " + strings.TrimPrefix(reply("${child_task_id}", "mock: say answered twice?", "${question_id}"), "mock: "),
		call("create_task_kandev", map[string]any{"title": "child", "autopilot": true,
			"prompt": askParent("Which colour?") + "\nmock: say after asking"}),
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
	if !child.Autopilot || child.ParentID != parent.ID {
		t.Fatalf("child: autopilot %v parent %s", child.Autopilot, child.ParentID)
	}
	waitSaid(t, d, child.ID, "the parent says blue")
	// The parent's second reaction repeated the answer: a no-op.
	waitSaid(t, d, parent.ID, `"status":"already_answered"`)
	if !saidContains(t, d, parent.ID, `"status":"answered"`) {
		t.Fatalf("parent output: %q", said(t, d, parent.ID))
	}
	var qid string
	for _, m := range conversation(t, d, child.ID) {
		if m.Kind == core.MsgQuestion {
			qid = metaField(m, "question_id")
		}
	}
	if st := questionStatus(t, d, child.ID, qid); st != "answered" {
		t.Fatalf("question %s is %s", qid, st)
	}
	// The child's tool result said to end the turn, and it waited for the
	// answer in the same agent session.
	if !saidContains(t, d, child.ID, `"status":"waiting_for_parent"`) {
		t.Fatalf("child output: %q", said(t, d, child.ID))
	}
	if got := waitSettled(t, d, child.ID); got.PendingQuestion != nil {
		t.Fatalf("still pending: %+v", got.PendingQuestion)
	}
}

// Asking again while a question is pending returns the same id.
func TestParentQuestionDedupe(t *testing.T) {
	d := daemontest.Start(t)
	parent := create(t, d, api.CreateTaskInput{Title: "parent"})
	create(t, d, api.CreateTaskInput{Title: "other", ParentID: parent.ID}) // keeps the parent held
	child := create(t, d, api.CreateTaskInput{Title: "child", ParentID: parent.ID, Autopilot: true, Start: true,
		Prompt: askParent("first?") + "\n" + askParent("second?")})
	q := waitQuestion(t, d, child.ID)
	waitSaid(t, d, child.ID, `"status":"already_pending"`)
	if !saidContains(t, d, child.ID, q.ID) || strings.Count(strings.Join(said(t, d, child.ID), "\n"), q.ID) < 2 {
		t.Fatalf("both calls should name %s: %q", q.ID, said(t, d, child.ID))
	}
	if q.Kind != core.QuestionParent || q.ParentTaskID != parent.ID {
		t.Fatalf("question %+v", q)
	}
	// No workflow move: the child stays where it was, its turn ended.
	got := waitSettled(t, d, child.ID)
	if got.Assignee == nil || got.Assignee.Kind != "role" || got.Stalled != nil {
		t.Fatalf("a question must hold the task with its role: %+v stalled %+v", got.Assignee, got.Stalled)
	}
}

// An autopilot root has no question tool; a call fails closed.
func TestAutopilotRootCannotAsk(t *testing.T) {
	d := daemontest.Start(t)
	root := create(t, d, api.CreateTaskInput{Title: "root", Autopilot: true, Start: true,
		Prompt: "mock: tools\n" + askParent("anyone?")})
	// The bridge never registered the tool, so the call fails closed there;
	// the engine's own refusal is tested in-process (a call that bypasses
	// the bridge).
	waitSaid(t, d, root.ID, "error ask_parent_question_kandev")
	if got := get(t, d, root.ID); got.PendingQuestion != nil {
		t.Fatalf("a question was recorded for an autopilot root: %+v", got.PendingQuestion)
	}
	for _, s := range said(t, d, root.ID) {
		if strings.HasPrefix(s, "tools:") && (strings.Contains(s, "ask_parent") || strings.Contains(s, "ask_user")) {
			t.Fatalf("an autopilot root sees a question tool: %s", s)
		}
	}
}

// A pending parent question survives kill -9 of the daemon: still pending,
// the parent still has it, and the answer still reaches the child.
func TestParentQuestionSurvivesKill9(t *testing.T) {
	d := daemontest.Start(t)
	parent := create(t, d, api.CreateTaskInput{Title: "parent"})
	create(t, d, api.CreateTaskInput{Title: "holder", ParentID: parent.ID})
	child := create(t, d, api.CreateTaskInput{Title: "child", ParentID: parent.ID, Autopilot: true, Start: true,
		Prompt: askParent("Which DB?")})
	q := waitQuestion(t, d, child.ID)
	// The parent was prompted with the question.
	daemontest.Eventually(t, wait, "the parent to be prompted", func() bool {
		for _, p := range prompts(conversation(t, d, parent.ID)) {
			if strings.Contains(p, q.ID) {
				return true
			}
		}
		return false
	})
	waitSettled(t, d, parent.ID)

	d.Kill9()
	d.Restart()

	if got := get(t, d, child.ID).PendingQuestion; got == nil || got.ID != q.ID || got.Status != core.QuestionPending {
		t.Fatalf("after restart: %+v", got)
	}
	message(t, d, parent.ID, reply(child.ID, "mock: say sqlite it is", q.ID))
	waitSaid(t, d, child.ID, "sqlite it is")
	if st := questionStatus(t, d, child.ID, q.ID); st != "answered" {
		t.Fatalf("question %s", st)
	}
}

// A user question survives kill -9 too: the answer arrives as the next turn.
func TestUserQuestionSurvivesKill9(t *testing.T) {
	d := daemontest.Start(t)
	task := create(t, d, api.CreateTaskInput{Title: "asks you", Start: true, Prompt: call("ask_user_question_kandev", map[string]any{
		"questions": []map[string]any{{"prompt": "Which DB?", "options": []map[string]any{{"label": "sqlite"}, {"label": "postgres"}}}},
	})})
	q := waitQuestion(t, d, task.ID)
	if q.Kind != core.QuestionUser || !get(t, d, task.ID).YourTurn {
		t.Fatalf("question %+v", q)
	}
	d.Kill9()
	d.Restart()
	if got := get(t, d, task.ID).PendingQuestion; got == nil || got.ID != q.ID {
		t.Fatalf("after restart: %+v", got)
	}
	out := d.MustRun("task", "answer", task.ID, "--option", "1", "--json")
	var res api.AnswerResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Status != "answered" || res.Delivered != "next_turn" {
		t.Fatalf("answer: %s (%v)", out, err)
	}
	daemontest.Eventually(t, wait, "the answer to be delivered", func() bool {
		for _, p := range prompts(conversation(t, d, task.ID)) {
			if strings.Contains(p, "answered your question "+q.ID) && strings.Contains(p, "sqlite") {
				return true
			}
		}
		return false
	})
	waitSettled(t, d, task.ID)
	// A second answer is a no-op.
	out = d.MustRun("task", "answer", task.ID, "--option", "2", "--json")
	if !strings.Contains(out, "already_answered") {
		t.Fatalf("second answer: %s", out)
	}
}

// A user question answered while the agent's call still waits returns in
// that call: the same turn continues.
func TestUserQuestionAnsweredInCall(t *testing.T) {
	d := daemontest.Start(t)
	task := create(t, d, api.CreateTaskInput{Title: "asks you", Start: true, Prompt: call("ask_user_question_kandev", map[string]any{
		"questions": []map[string]any{{"prompt": "Proceed?", "options": []map[string]any{{"label": "yes"}, {"label": "no"}}}},
	}) + "\nmock: say carrying on"})
	waitQuestion(t, d, task.ID)
	r := d.Run("task", "answer", task.ID, "--option", "3")
	if r.Code != 1 || !strings.Contains(r.Stderr, "option 3 does not exist") {
		t.Fatalf("bad option: %d %q", r.Code, r.Stderr)
	}
	out := d.MustRun("task", "answer", task.ID, "--option", "1", "--json")
	if !strings.Contains(out, `"delivered":"waiting_call"`) {
		t.Fatalf("answer: %s", out)
	}
	waitSaid(t, d, task.ID, "carrying on")
	if !saidContains(t, d, task.ID, `"answers":["yes"]`) {
		t.Fatalf("output: %q", said(t, d, task.ID))
	}
}

// Superseded: new explicit input reaches the child; the parent's late reply
// is refused with the question's state. Stale: the child is stopped.
func TestSupersededAndStale(t *testing.T) {
	d := daemontest.Start(t)
	parent := create(t, d, api.CreateTaskInput{Title: "parent"})
	create(t, d, api.CreateTaskInput{Title: "holder", ParentID: parent.ID})
	child := create(t, d, api.CreateTaskInput{Title: "child", ParentID: parent.ID, Autopilot: true, Start: true,
		Prompt: askParent("Left or right?")})
	q := waitQuestion(t, d, child.ID)
	waitSettled(t, d, child.ID)
	// The operator's uncorrelated message supersedes the question.
	message(t, d, child.ID, "mock: say going left")
	waitSaid(t, d, child.ID, "going left")
	if st := questionStatus(t, d, child.ID, q.ID); st != "superseded" {
		t.Fatalf("question is %s, want superseded", st)
	}
	message(t, d, parent.ID, reply(child.ID, "right", q.ID))
	waitSaid(t, d, parent.ID, "error message_task_kandev: CONFLICT")
	if !saidContains(t, d, parent.ID, "is superseded") {
		t.Fatalf("parent output: %q", said(t, d, parent.ID))
	}

	// Stale: ask again, then stop the child.
	waitSettled(t, d, child.ID)
	message(t, d, child.ID, askParent("Up or down?"))
	q2 := waitQuestion(t, d, child.ID)
	if q2.ID == q.ID {
		t.Fatal("a new question should get a new id")
	}
	if res, err := d.Client.StopTask(context.Background(), child.ID, api.StopTaskInput{}); err != nil || res.Result != "stopped" {
		t.Fatalf("stop: %+v %v", res, err)
	}
	if st := questionStatus(t, d, child.ID, q2.ID); st != "stale" {
		t.Fatalf("question is %s, want stale", st)
	}
	waitSettled(t, d, parent.ID)
	message(t, d, parent.ID, reply(child.ID, "up", q2.ID))
	daemontest.Eventually(t, wait, "the stale reply to be refused", func() bool { return saidContains(t, d, parent.ID, "is stale") })
}

// Stop: stopped then not_running; session cancelled; task in review; its
// queue intact; no process left in the agent's group.
func TestStopContract(t *testing.T) {
	d := daemontest.Start(t)
	ctx := context.Background()
	task := create(t, d, api.CreateTaskInput{Title: "busy", Start: true, Prompt: "mock: say started\nmock: hang"})
	waitSaid(t, d, task.ID, "started")
	message(t, d, task.ID, "mock: say later")
	pid := get(t, d, task.ID).Session.PID
	res, err := d.Client.StopTask(ctx, task.ID, api.StopTaskInput{})
	if err != nil || res.Result != "stopped" || len(res.Sessions) != 1 {
		t.Fatalf("first stop: %+v %v", res, err)
	}
	res, err = d.Client.StopTask(ctx, task.ID, api.StopTaskInput{})
	if err != nil || res.Result != "not_running" {
		t.Fatalf("second stop: %+v %v", res, err)
	}
	groupGone(t, pid)
	got := get(t, d, task.ID)
	if got.Session.State != core.SessionCancelled || got.Status != core.StatusReview || got.Queued != 1 || !got.Halted {
		t.Fatalf("after stop: session %s status %s queued %d halted %v", got.Session.State, got.Status, got.Queued, got.Halted)
	}
	// The queue waits for explicit input: an explicit start delivers it.
	if _, err := d.Client.StartTask(ctx, task.ID, api.StartTaskInput{}); err != nil {
		t.Fatal(err)
	}
	waitSaid(t, d, task.ID, "later")
}

// A stop racing a slow start leaves nothing running.
func TestStopRacingStart(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_MOCK_INIT_DELAY=1500ms"))
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		task := create(t, d, api.CreateTaskInput{Title: "race", Prompt: "mock: say should never run", Start: true})
		res, err := d.Client.StopTask(ctx, task.ID, api.StopTaskInput{})
		if err != nil || res.Result != "stopped" {
			t.Fatalf("stop: %+v %v", res, err)
		}
		got := get(t, d, task.ID)
		if got.Session != nil {
			if got.Session.State.Live() {
				t.Fatalf("session still %s after stop", got.Session.State)
			}
			if got.Session.PID > 0 {
				groupGone(t, got.Session.PID)
			}
		}
		if saidContains(t, d, task.ID, "should never run") {
			t.Fatal("a turn escaped the stop")
		}
		if got.Queued != 1 {
			t.Fatalf("queued = %d, want the prompt kept", got.Queued)
		}
	}
	if out, _ := exec.Command("pgrep", "-f", "mock-agent").Output(); strings.TrimSpace(string(out)) != "" {
		// Other tests may run mock agents in parallel packages; only fail
		// for ours, which carry this daemon's home in their environment.
		for _, pid := range strings.Fields(string(out)) {
			env, _ := exec.Command("cat", "/proc/"+pid+"/environ").Output()
			if strings.Contains(string(env), "KANDEV_HOME="+d.Home.Dir) {
				t.Fatalf("agent %s of this daemon still runs", pid)
			}
		}
	}
}

// A three-level autopilot tree relays a question from the grandchild to
// the root's child and back down.
func TestThreeLevelRelay(t *testing.T) {
	d := daemontest.Start(t)
	// The root answers its child's relayed question with a message that
	// makes the child answer the grandchild.
	rootReply := reply("${child_task_id}",
		reply("${b_task}", "mock: say grandchild got: blue", "${b_question}"), "${question_id}")
	// Build the tree first: each level's open subtask holds it between turns.
	ctx := context.Background()
	root := create(t, d, api.CreateTaskInput{Title: "root"})
	mid := create(t, d, api.CreateTaskInput{Title: "middle", ParentID: root.ID, Autopilot: true})
	leaf := create(t, d, api.CreateTaskInput{Title: "leaf", ParentID: mid.ID, Autopilot: true})
	if _, err := d.Client.StartTask(ctx, root.ID, api.StartTaskInput{Prompt: "mock: on question: " + strings.TrimPrefix(rootReply, "mock: ")}); err != nil {
		t.Fatal(err)
	}
	waitSettled(t, d, root.ID)
	// The middle task cannot decide: it asks its own parent, carrying the
	// grandchild's ids in its question.
	relay := call("ask_parent_question_kandev", map[string]any{"questions": []map[string]any{{
		"prompt": "My child asks: what colour?\nb_task: ${child_task_id}\nb_question: ${question_id}"}}})
	if _, err := d.Client.StartTask(ctx, mid.ID, api.StartTaskInput{Prompt: "mock: on question: " + strings.TrimPrefix(relay, "mock: ")}); err != nil {
		t.Fatal(err)
	}
	waitSettled(t, d, mid.ID)
	if _, err := d.Client.StartTask(ctx, leaf.ID, api.StartTaskInput{Prompt: askParent("What colour?")}); err != nil {
		t.Fatal(err)
	}
	waitSaid(t, d, leaf.ID, "grandchild got: blue")
	for _, id := range []string{leaf.ID, mid.ID} {
		if q := get(t, d, id).PendingQuestion; q != nil {
			t.Fatalf("task %s still has %+v", id, q)
		}
	}
}
