package daemon_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// Issue 20: a config.toml that stops parsing while the daemon runs never
// widens what an agent may do. The file says deny for autopilot, and a
// mistake elsewhere in it must not turn that into the built-in allow.
func TestBrokenConfigFailsClosed(t *testing.T) {
	d := daemontest.Start(t)
	writeConfig(t, d, "autopilot_permission = \"deny\"\npermission = \"allow\"\nbogus = \"x\"\n")
	for _, tc := range []struct {
		title     string
		autopilot bool
	}{{"auto", true}, {"normal", false}} {
		task := create(t, d, api.CreateTaskInput{Title: tc.title, Profile: "mock", Autopilot: tc.autopilot, Start: true, Prompt: "mock: permission rm -rf build/"})
		waitSaid(t, d, task.ID, "permission: reject")
		e := waitPermissionEntries(t, d, task.ID, 1)
		if !strings.Contains(e[0].Text, "by policy deny") || !strings.Contains(e[0].Text, "config error") || !strings.Contains(e[0].Text, "config.toml:3") {
			t.Fatalf("%s decision %q; want deny naming the config error and its line", tc.title, e[0].Text)
		}
		if n := len(questionEntries(t, d, task.ID)); n != 0 {
			t.Fatalf("%s asked %d questions", tc.title, n)
		}
	}
}

// `task create --assignee ROLE` takes the role's profile, whatever the
// default profile is; a --profile that disagrees is still refused.
func TestCreateWithAssigneeTakesTheRolesProfile(t *testing.T) {
	d := daemontest.Start(t)
	writeConfig(t, d, "profile = \"mock\"\n")
	d.MustRun("profile", "add", "second", "--command", d.Bin, "--arg", "mock-agent")
	d.MustRun("role", "add", "reviewer", "--profile", "second")
	var task core.Task
	if err := json.Unmarshal([]byte(d.MustRun("task", "create", "Review it", "--assignee", "reviewer", "--cwd", t.TempDir(), "--json")), &task); err != nil {
		t.Fatal(err)
	}
	if task.Profile != "second" || task.Assignee == nil || task.Assignee.Name != "reviewer" {
		t.Fatalf("created with profile %s for %+v", task.Profile, task.Assignee)
	}
	if r := d.Run("task", "create", "Review it", "--assignee", "reviewer", "--profile", "mock", "--cwd", t.TempDir()); r.Code == 0 || !strings.Contains(r.Stderr, "drop --profile") {
		t.Fatalf("a disagreeing --profile: exit %d %s", r.Code, r.Stderr)
	}
}
