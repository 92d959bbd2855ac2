package engine_test

import (
	"testing"

	"github.com/kandev/kandev/core"
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
	for i := 0; i < core.QueueCap; i++ {
		if err := msg(tr.u.ID); err != nil {
			t.Fatalf("message %d from the unrelated task: %v", i, err)
		}
	}
	wantCode(t, msg(tr.u.ID), core.CodeConflict) // its own cap
	wantCode(t, msg(tr.g.ID), core.CodeConflict) // others together
	if err := msg(tr.p.ID); err != nil {         // the direct parent
		t.Fatalf("direct parent refused: %v", err)
	}
	if _, err := c.eng.MessageTask(c.ctx, tr.s.ID, core.MessageInput{Text: "operator"}); err != nil {
		t.Fatalf("operator message refused: %v", err)
	}
	if _, err := c.eng.MessageTask(c.ctx, tr.s.ID, core.MessageInput{Text: "now", Delivery: core.DeliveryInterrupt}); err != nil {
		t.Fatalf("operator interrupt refused: %v", err)
	}
	got, _ := c.eng.GetTask(c.ctx, tr.s.ID)
	if got.Queued != core.QueueCap+3 {
		t.Fatalf("queued %d, want %d", got.Queued, core.QueueCap+3)
	}
}
