package engine

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/prompt"
	"github.com/kandev/kandev/store"
)

// A tasks.stalled row written before stalls carried their cause (this
// one by the daemon of the day: a child's question left unanswered) is
// classified as it is read, and the engine's decisions follow the cause.
func TestOldStallRowReadsWithItsCause(t *testing.T) {
	old := `{"reason":"Stalled","from":"role:eng","detail":"unanswered question q1 from subtask k2 (fix): the turn ended without answering it","at":"2026-11-30T12:00:00Z"}`
	task := taskFromView(store.TaskView{Task: store.Task{ID: "k1", Status: "todo", Assignee: "person:operator", Stalled: old}}, false)
	if task.Stalled == nil || task.Stalled.Cause != core.CauseUnansweredQuestion {
		t.Fatalf("stall %+v, want cause %s", task.Stalled, core.CauseUnansweredQuestion)
	}
	if !task.Stalled.Cause.Alarm() || stallWhy(task.Stalled.Cause) != prompt.WhyUnanswered {
		t.Fatalf("cause %s: alarm %v, why %q", task.Stalled.Cause, task.Stalled.Cause.Alarm(), stallWhy(task.Stalled.Cause))
	}
	// As written now: the cause is stored and read back as such.
	st := core.Stall{Reason: "Stalled", From: core.ParseBy("role:eng"), Detail: "last words", Cause: core.CauseStalledSubtask}
	task = taskFromView(store.TaskView{Task: store.Task{ID: "k1", Status: "todo", Stalled: stallJSON(st)}}, false)
	if task.Stalled == nil || task.Stalled.Cause != core.CauseStalledSubtask {
		t.Fatalf("stall %+v, want cause %s", task.Stalled, core.CauseStalledSubtask)
	}
}

// A malformed actor in a stored row is the defined fallback, not an
// error: the task still reads, the text is kept for the wire, and no
// decision takes it for a person or a task (escalation skips it).
func TestMalformedStoredActorReads(t *testing.T) {
	task := taskFromView(store.TaskView{Task: store.Task{ID: "k1", Status: "todo", CreatedBy: "robot:r2",
		Stalled: `{"reason":"Stalled","from":"role:","detail":"x","at":"2026-11-30T12:00:00Z"}`}}, false)
	if !task.CreatedBy.Malformed() || task.CreatedBy.IsPerson() || task.CreatedBy.IsTask() {
		t.Fatalf("created_by %+v", task.CreatedBy)
	}
	if task.Stalled == nil || !task.Stalled.From.Malformed() {
		t.Fatalf("stall %+v", task.Stalled)
	}
	b, err := json.Marshal(task)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"created_by":"robot:r2"`) || !strings.Contains(string(b), `"from":"role:"`) {
		t.Fatalf("the wire lost the stored text: %s", b)
	}
	m := messageFromStore(store.Message{Seq: 1, TaskID: "k1", Kind: "prompt", Author: "operator"})
	if !m.Author.Malformed() || m.Author.Label() != "operator" {
		t.Fatalf("author %+v, label %q", m.Author, m.Author.Label())
	}
}
