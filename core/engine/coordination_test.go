package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/capability"
	"github.com/kandev/kandev/core/engine"
	"github.com/kandev/kandev/store"
)

// coordEnv is an in-process engine whose agents never start (their profile
// names a command that does not exist), so authorization can be tested on
// the engine alone, with actors constructed directly.
type coordEnv struct {
	t        *testing.T
	eng      *engine.Engine
	db       *store.DB
	ctx      context.Context
	sessions map[string]bool
}

func newCoord(t *testing.T) *coordEnv {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(dir, "kandev.db"))
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(ctx, engine.Options{DB: db, Home: core.Home{Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close(); db.Close() })
	if _, err := eng.Roles.AddProfile(ctx, core.Profile{Name: "idle", Command: "kandev-test-no-such-agent", MCP: true}); err != nil {
		t.Fatal(err)
	}
	return &coordEnv{t: t, eng: eng, db: db, ctx: ctx, sessions: map[string]bool{}}
}

func (c *coordEnv) task(title, parent string, autopilot bool) core.Task {
	c.t.Helper()
	task, err := c.eng.Tasks.CreateTask(c.ctx, api.CreateTaskInput{Title: title, ParentID: parent, Autopilot: autopilot,
		Profile: "idle", CWD: c.t.TempDir()})
	if err != nil {
		c.t.Fatal(err)
	}
	return task
}

// as acts as the agent of a task through a recorded (not live) session:
// the calls tested here behave the same without a process.
func (c *coordEnv) as(taskID string) context.Context {
	sid := "s-" + taskID
	if !c.sessions[sid] {
		now := time.Now()
		if err := c.db.InsertSession(c.ctx, store.Session{ID: sid, TaskID: taskID, Role: "idle", Profile: "idle",
			State: string(core.SessionWaitingForInput), CreatedAt: now, UpdatedAt: now}); err != nil {
			c.t.Fatal(err)
		}
		c.sessions[sid] = true
	}
	return core.WithActor(c.ctx, core.Actor{Kind: core.ActorAgent, TaskID: taskID, SessionID: sid})
}

func (c *coordEnv) call(taskID, tool string, args map[string]any) (any, error) {
	b, _ := json.Marshal(args)
	return c.eng.Tools.CallTool(c.as(taskID), tool, b)
}

func wantCode(t *testing.T, err error, code core.Code) {
	t.Helper()
	var ce *core.Error
	if !errors.As(err, &ce) || ce.Code != code {
		t.Fatalf("error %v, want %s", err, code)
	}
}

// tree: g → p → {c (autopilot), s}; u unrelated.
type tree struct{ g, p, c, s, u core.Task }

func (c *coordEnv) tree() tree {
	g := c.task("grandparent", "", false)
	p := c.task("parent", g.ID, false)
	return tree{g: g, p: p, c: c.task("child", p.ID, true), s: c.task("sibling", p.ID, false), u: c.task("unrelated", "", false)}
}

func (c *coordEnv) ask(child string) string {
	c.t.Helper()
	res, err := c.call(child, capability.AskParent, map[string]any{"questions": []map[string]any{{"prompt": "which?"}}})
	if err != nil {
		c.t.Fatal(err)
	}
	return res.(map[string]any)["question_id"].(string)
}

// Only the recorded direct parent answers; everyone else is FORBIDDEN and
// nothing changes; a repeat is a no-op.
func TestReplyAuthorization(t *testing.T) {
	c := newCoord(t)
	tr := c.tree()
	qid := c.ask(tr.c.ID)
	for name, who := range map[string]string{"sibling": tr.s.ID, "grandparent": tr.g.ID, "child itself": tr.c.ID, "unrelated": tr.u.ID} {
		_, err := c.call(who, "message_task_kandev", map[string]any{"task_id": tr.c.ID, "prompt": "x", "reply_to_question_id": qid})
		wantCode(t, err, core.CodeForbidden)
		got, _ := c.eng.Tasks.GetTask(c.ctx, tr.c.ID)
		if got.PendingQuestion == nil || got.PendingQuestion.ID != qid {
			t.Fatalf("%s's refused reply changed the question: %+v", name, got.PendingQuestion)
		}
	}
	// The operator is not the parent either: it supersedes with a plain
	// message instead.
	_, err := c.eng.Messages.MessageTask(c.ctx, tr.c.ID, api.MessageInput{Text: "x", ReplyTo: qid})
	wantCode(t, err, core.CodeForbidden)

	res, err := c.call(tr.p.ID, "message_task_kandev", map[string]any{"task_id": tr.c.ID, "prompt": "blue", "reply_to_question_id": qid})
	if err != nil || res.(api.MessageResult).Status != "answered" {
		t.Fatalf("parent reply: %+v %v", res, err)
	}
	res, err = c.call(tr.p.ID, "message_task_kandev", map[string]any{"task_id": tr.c.ID, "prompt": "blue again", "reply_to_question_id": qid})
	if err != nil || res.(api.MessageResult).Status != "already_answered" {
		t.Fatalf("repeat reply: %+v %v", res, err)
	}
	got, _ := c.eng.Tasks.GetTask(c.ctx, tr.c.ID)
	if got.PendingQuestion != nil || got.Queued != 1 {
		t.Fatalf("after answer: question %+v queued %d (want the answer queued once)", got.PendingQuestion, got.Queued)
	}
}

// Interrupt: direct parent only, never silently downgraded, nothing queued.
func TestInterruptAuthorization(t *testing.T) {
	c := newCoord(t)
	tr := c.tree()
	for name, who := range map[string]string{"sibling": tr.s.ID, "grandparent": tr.g.ID, "child itself": tr.c.ID, "unrelated": tr.u.ID} {
		_, err := c.call(who, "message_task_kandev", map[string]any{"task_id": tr.c.ID, "prompt": "steer", "delivery_mode": "interrupt"})
		wantCode(t, err, core.CodeForbidden)
		if got, _ := c.eng.Tasks.GetTask(c.ctx, tr.c.ID); got.Queued != 0 {
			t.Fatalf("%s's refused interrupt queued a message", name)
		}
	}
	res, err := c.call(tr.p.ID, "message_task_kandev", map[string]any{"task_id": tr.c.ID, "prompt": "steer", "delivery_mode": "interrupt"})
	if err != nil {
		t.Fatalf("parent interrupt: %v", err)
	}
	if got, _ := c.eng.Tasks.GetTask(c.ctx, tr.c.ID); got.Queued != 1 {
		t.Fatalf("parent interrupt: %+v, queued %d", res, got.Queued)
	}
}

// Stop: direct parent only, checked before any side effect; idempotent.
func TestStopAuthorization(t *testing.T) {
	c := newCoord(t)
	tr := c.tree()
	qid := c.ask(tr.c.ID)
	for name, who := range map[string]string{"sibling": tr.s.ID, "grandparent": tr.g.ID, "child itself": tr.c.ID, "unrelated": tr.u.ID} {
		_, err := c.call(who, "stop_task_kandev", map[string]any{"task_id": tr.c.ID})
		wantCode(t, err, core.CodeForbidden)
		got, _ := c.eng.Tasks.GetTask(c.ctx, tr.c.ID)
		if got.Halted || got.PendingQuestion == nil || got.PendingQuestion.ID != qid {
			t.Fatalf("%s's refused stop changed the task: halted %v question %+v", name, got.Halted, got.PendingQuestion)
		}
	}
	// Nothing runs (the profile cannot start): not_running, no change.
	res, err := c.call(tr.p.ID, "stop_task_kandev", map[string]any{"task_id": tr.c.ID})
	if err != nil || res.(api.StopResult).Result != "not_running" {
		t.Fatalf("parent stop: %+v %v", res, err)
	}
}

// An autopilot root has no question tool, and a call that reaches the
// engine anyway fails closed.
func TestNoParentToAsk(t *testing.T) {
	c := newCoord(t)
	root := c.task("root", "", true)
	_, err := c.call(root.ID, capability.AskParent, map[string]any{"questions": []map[string]any{{"prompt": "?"}}})
	wantCode(t, err, core.CodeForbidden)
	if ce := core.AsError(err); !strings.Contains(ce.Message, "no parent to ask") {
		t.Fatalf("message %q", ce.Message)
	}
	// A normal task holds the user tool only.
	normal := c.task("normal", "", false)
	_, err = c.call(normal.ID, capability.AskParent, map[string]any{"questions": []map[string]any{{"prompt": "?"}}})
	wantCode(t, err, core.CodeForbidden)
	if got, _ := c.eng.Tasks.GetTask(c.ctx, root.ID); got.PendingQuestion != nil {
		t.Fatal("a refused ask recorded a question")
	}
}

// Bad arguments are refused before anything happens.
func TestToolArgumentValidation(t *testing.T) {
	c := newCoord(t)
	tr := c.tree()
	cases := []struct {
		tool string
		args map[string]any
	}{
		{"message_task_kandev", map[string]any{"task_id": tr.c.ID, "prompt": "x", "bogus": 1}},
		{"message_task_kandev", map[string]any{"task_id": tr.c.ID}},
		{"message_task_kandev", map[string]any{"task_id": tr.c.ID, "prompt": "x", "delivery_mode": "shout"}},
		{capability.AskParent, map[string]any{"questions": []map[string]any{}}},
		{capability.AskParent, map[string]any{"questions": []map[string]any{{"prompt": "a", "options": []map[string]any{{"label": "only one"}}}}}},
		{"create_task_kandev", map[string]any{"title": 5}},
	}
	for _, tc := range cases {
		who := tr.p.ID
		if tc.tool == capability.AskParent {
			who = tr.c.ID
		}
		_, err := c.call(who, tc.tool, tc.args)
		wantCode(t, err, core.CodeValidation)
	}
	if got, _ := c.eng.Tasks.GetTask(c.ctx, tr.c.ID); got.Queued != 0 || got.PendingQuestion != nil {
		t.Fatalf("refused calls changed the child: queued %d question %+v", got.Queued, got.PendingQuestion)
	}
	_, err := c.call(tr.p.ID, "no_such_tool_kandev", nil)
	wantCode(t, err, core.CodeNotFound)
}

// The queue cap refuses with CONFLICT and lists what is queued.
func TestQueueCap(t *testing.T) {
	c := newCoord(t)
	task := c.task("busy", "", false)
	for i := 0; i < 10; i++ {
		if _, err := c.eng.Messages.MessageTask(c.ctx, task.ID, api.MessageInput{Text: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := c.eng.Messages.MessageTask(c.ctx, task.ID, api.MessageInput{Text: "one too many"})
	wantCode(t, err, core.CodeConflict)
	details, _ := json.Marshal(core.AsError(err).Details)
	if !strings.Contains(string(details), `"queued"`) {
		t.Fatalf("details %s", details)
	}
}

// The sign-off guard: no role marks its own task done; its delegator may.
func TestSignOffGuard(t *testing.T) {
	c := newCoord(t)
	tr := c.tree()
	_, err := c.call(tr.c.ID, "set_task_status_kandev", map[string]any{"task_id": tr.c.ID, "status": "done"})
	wantCode(t, err, core.CodeForbidden)
	res, err := c.call(tr.p.ID, "set_task_status_kandev", map[string]any{"task_id": tr.c.ID, "status": "done"})
	if err != nil || res.(core.Task).Status != core.StatusDone {
		t.Fatalf("parent sign-off: %+v %v", res, err)
	}
}
