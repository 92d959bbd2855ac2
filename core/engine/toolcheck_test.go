package engine_test

import (
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/capability"
)

// An agent that calls the daemon's route directly (not through kandev
// mcp's schema check) gets the same check and the same words: the
// bridge's refusals and the daemon's are one function's
// (capability.Check).
func TestDirectCallGetsTheBridgesCheck(t *testing.T) {
	c := newCoord(t)
	root := c.task("root", "", false)
	for _, tc := range []struct {
		tool string
		raw  string
	}{
		{"create_task_kandev", `{"title":"x","colour":"red","start":false}`},
		{"create_task_kandev", `{"title":"x","sandbox":"vm","start":false}`},
		{"get_task_conversation_kandev", `{"limit":0}`},
		{"get_task_conversation_kandev", `{"task_id":null}`},
		{"get_task_kandev", `[1]`},
		{"message_task_kandev", `{"task_id":"` + root.ID + `","prompt":"p","comments":[]}`},
	} {
		tool, _ := capability.Lookup(tc.tool)
		_, want := capability.Check(tool, []byte(tc.raw))
		if want == nil {
			t.Fatalf("%s %s: capability.Check accepts it", tc.tool, tc.raw)
		}
		_, err := c.eng.Tools.CallTool(c.as(root.ID), tc.tool, []byte(tc.raw))
		if err == nil {
			t.Errorf("%s %s: the daemon accepted it; want VALIDATION_ERROR: %s", tc.tool, tc.raw, want)
			continue
		}
		if e := core.AsError(err); e.Code != core.CodeValidation || e.Message != want.Error() {
			t.Errorf("%s %s: %v\n want VALIDATION_ERROR: %s", tc.tool, tc.raw, err, want)
		}
	}
	// What the schema takes, the daemon takes: 10.0 is an integer.
	if _, err := c.eng.Tools.CallTool(c.as(root.ID), "get_task_conversation_kandev", []byte(`{"limit":10.0}`)); err != nil {
		t.Errorf("limit 10.0: %v", err)
	}
}
