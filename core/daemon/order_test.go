package daemon_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// A question an agent asks over MCP is recorded after the words it
// streamed before asking: the call comes over the MCP bridge, apart from
// the ACP stream, and used to overtake it (the question logged above the
// text that led to it, about one run in three). Several tasks at once, so
// that a lost order shows on most runs.
func TestQuestionFollowsTheWordsBeforeIt(t *testing.T) {
	d := daemontest.Start(t)
	var ids []string
	for i := range 8 {
		task := create(t, d, api.CreateTaskInput{Title: fmt.Sprintf("ask %d", i), Start: true, Prompt: "mock: say about to ask\n" +
			call("ask_user_question_kandev", map[string]any{"questions": []map[string]any{{"prompt": "Which env?"}}})})
		ids = append(ids, task.ID)
	}
	for _, id := range ids {
		waitQuestion(t, d, id)
		var kinds []string
		for _, m := range conversation(t, d, id) {
			switch {
			case m.Kind == core.MsgAgent && strings.Contains(m.Text, "about to ask"):
				kinds = append(kinds, "agent")
			case m.Kind == core.MsgQuestion:
				kinds = append(kinds, "question")
			}
		}
		if strings.Join(kinds, ",") != "agent,question" {
			t.Errorf("task %s recorded %v, want the agent's words before its question", id, kinds)
		}
	}
}
