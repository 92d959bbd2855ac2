package tui

import (
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
)

// The detail pane says which host a task's agent runs on, as it says its
// sandbox; a task on this machine says nothing.
func TestDetailShowsHost(t *testing.T) {
	remote := core.Task{ID: "hst001", Title: "remote", Status: core.StatusTodo, Profile: "mock", Host: "build1",
		CreatedAt: testNow, UpdatedAt: testNow}
	auto := core.Task{ID: "aut001", Title: "auto", Status: core.StatusTodo, Profile: "mock", Host: "auto",
		CreatedAt: testNow, UpdatedAt: testNow}
	local := core.Task{ID: "loc001", Title: "local", Status: core.StatusTodo, Profile: "mock",
		CreatedAt: testNow, UpdatedAt: testNow}
	d := newDriver(t, newFake(remote, auto, local), 100, 30)
	for _, c := range []struct{ id, want string }{{"hst001", "host build1"}, {"aut001", "host auto"}, {"loc001", ""}} {
		d.selectTask(c.id)
		l := d.m.layout()
		text := strings.Join(detailHeader(d.m.st, d.m.selectedTask(), l.detailW, l.detail, testNow), "\n")
		if c.want != "" && !strings.Contains(text, c.want) || c.want == "" && strings.Contains(text, "host ") {
			t.Errorf("%s: header %q, want %q", c.id, text, c.want)
		}
	}
}
