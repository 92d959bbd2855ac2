package engine_test

import (
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// Other tasks' agents cannot fill a task's queue against its operator or
// its direct parent: each sender has its own cap, the others share one, and
// the operator and the direct parent are never refused for what others
// queued.
func TestQueueFloodLeavesOperatorAndParentThrough(t *testing.T) {
	c := newCoord(t)
	tr := c.tree()
	msg := func(from string) error {
		_, err := c.call(from, "message_task_kandev", map[string]any{"task_id": tr.s.ID, "prompt": "flood from " + from})
		return err
	}
	for i := 0; i < api.QueueCap; i++ {
		if err := msg(tr.u.ID); err != nil {
			t.Fatalf("message %d from the unrelated task: %v", i, err)
		}
	}
	wantCode(t, msg(tr.u.ID), core.CodeConflict) // its own cap
	wantCode(t, msg(tr.g.ID), core.CodeConflict) // others together
	if err := msg(tr.p.ID); err != nil {         // the direct parent
		t.Fatalf("direct parent refused: %v", err)
	}
	if _, err := c.eng.Messages.MessageTask(c.ctx, tr.s.ID, api.MessageInput{Text: "operator"}); err != nil {
		t.Fatalf("operator message refused: %v", err)
	}
	if _, err := c.eng.Messages.MessageTask(c.ctx, tr.s.ID, api.MessageInput{Text: "now", Delivery: api.DeliveryInterrupt}); err != nil {
		t.Fatalf("operator interrupt refused: %v", err)
	}
	got, _ := c.eng.Tasks.GetTask(c.ctx, tr.s.ID)
	if got.Queued != api.QueueCap+3 {
		t.Fatalf("queued %d, want %d", got.Queued, api.QueueCap+3)
	}
}

// Dropping queued items is the operator's, by queue id or all at once,
// and is noted in the conversation.
func TestDropQueued(t *testing.T) {
	c := newCoord(t)
	tr := c.tree()
	for i := 0; i < 3; i++ {
		if _, err := c.call(tr.u.ID, "message_task_kandev", map[string]any{"task_id": tr.s.ID, "prompt": "m"}); err != nil {
			t.Fatal(err)
		}
	}
	v, err := c.eng.Messages.TaskQueue(c.ctx, tr.s.ID)
	if err != nil || len(v.Items) != 3 || v.Items[2].Position != 3 || v.Items[0].Sender != core.ByRef(core.TaskRef(tr.u.ID)) {
		t.Fatalf("queue %+v %v", v, err)
	}
	_, err = c.eng.Messages.DropQueued(c.as(tr.p.ID), tr.s.ID, api.DropQueueInput{All: true})
	wantCode(t, err, core.CodeForbidden)
	_, err = c.eng.Messages.DropQueued(c.ctx, tr.s.ID, api.DropQueueInput{})
	wantCode(t, err, core.CodeValidation)
	_, err = c.eng.Messages.DropQueued(c.ctx, tr.s.ID, api.DropQueueInput{ID: v.Items[0].ID + 1000})
	wantCode(t, err, core.CodeNotFound)
	got, err := c.eng.Messages.DropQueued(c.ctx, tr.s.ID, api.DropQueueInput{ID: v.Items[1].ID})
	if err != nil || len(got.Items) != 2 || len(got.Dropped) != 1 || got.Dropped[0] != v.Items[1].ID || got.Items[1].ID != v.Items[2].ID {
		t.Fatalf("drop one: %+v %v", got, err)
	}
	got, err = c.eng.Messages.DropQueued(c.ctx, tr.s.ID, api.DropQueueInput{All: true})
	if err != nil || len(got.Items) != 0 || len(got.Dropped) != 2 {
		t.Fatalf("drop all: %+v %v", got, err)
	}
	if task, _ := c.eng.Tasks.GetTask(c.ctx, tr.s.ID); task.Queued != 0 {
		t.Fatalf("task still counts %d queued", task.Queued)
	}
	page, _ := c.eng.Messages.Conversation(c.ctx, tr.s.ID, api.ConversationInput{})
	noted := false
	for _, m := range page.Messages {
		noted = noted || (m.Kind == core.MsgStatus && strings.Contains(m.Text, "dropped 2 queued"))
	}
	if !noted {
		t.Fatalf("no note of the drop: %+v", page.Messages)
	}
}

// The direct parent is capped by its own backlog, interrupts included, so
// no agent grows a queue without bound; the operator's interrupt still goes.
func TestParentCappedByOwnBacklog(t *testing.T) {
	c := newCoord(t)
	tr := c.tree()
	for i := 0; i < api.QueueCap; i++ {
		if _, err := c.call(tr.p.ID, "message_task_kandev", map[string]any{"task_id": tr.s.ID, "prompt": "m", "delivery_mode": "interrupt"}); err != nil {
			t.Fatalf("parent message %d: %v", i, err)
		}
	}
	_, err := c.call(tr.p.ID, "message_task_kandev", map[string]any{"task_id": tr.s.ID, "prompt": "m", "delivery_mode": "interrupt"})
	wantCode(t, err, core.CodeConflict)
	if _, err := c.eng.Messages.MessageTask(c.ctx, tr.s.ID, api.MessageInput{Text: "now", Delivery: api.DeliveryInterrupt}); err != nil {
		t.Fatalf("operator interrupt refused: %v", err)
	}
}
