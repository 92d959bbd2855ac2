package core

import (
	"strings"
	"testing"
)

func TestWorkDir(t *testing.T) {
	for _, c := range []struct {
		name string
		t    Task
		dir  string
		err  string
	}{
		{"worktree", Task{ID: "a", CWD: "/repo", Workspace: &Workspace{Mode: WorkspaceWorktree, Dir: "/wt/a"}}, "/wt/a", ""},
		{"inherit", Task{ID: "b", Workspace: &Workspace{Mode: WorkspaceInherit, Dir: "/wt/p"}}, "/wt/p", ""},
		{"shared", Task{ID: "c", CWD: "/tmp/x", Workspace: &Workspace{Mode: WorkspaceShared}}, "/tmp/x", ""},
		{"no workspace", Task{ID: "d", CWD: "/tmp/y"}, "/tmp/y", ""},
		{"discarded", Task{ID: "e", CWD: "/repo", Workspace: &Workspace{Mode: WorkspaceDiscarded, Dir: "/wt/e"}}, "", "worktree was discarded"},
		{"retired", Task{ID: "f", Workspace: &Workspace{Mode: WorkspaceRetired, Dir: "/wt/f", Branch: "kandev/f", Repo: "/repo"}}, "", "archived done"},
		{"nothing", Task{ID: "g"}, "", "has no directory"},
	} {
		dir, err := c.t.WorkDir()
		if dir != c.dir || (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: WorkDir() = %q, %v; want %q, %q", c.name, dir, err, c.dir, c.err)
		}
	}
}
