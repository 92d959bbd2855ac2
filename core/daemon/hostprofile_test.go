package daemon_test

import (
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
	"github.com/kandev/kandev/internal/sshtest"
)

// TestProfileDefaultHost: a profile's host is where a new top-level task
// of it runs when its create names none. The host given at create wins,
// a subtask runs where its parent does (the profile's host does not move
// it), and the profile's host wins over the configuration's. A profile
// naming a host that is not added is refused. A task of the profile
// started runs on its host: its agent's command is looked up there.
func TestProfileDefaultHost(t *testing.T) {
	h := sshtest.Start(t)
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_SSH_CONFIG="+h.Config))
	work := t.TempDir()
	d.MustRun("host", "add", "lb", "--ssh", h.Alias, "--dir", h.RemoteDir+"/kandev")
	d.MustRun("host", "add", "lb2", "--ssh", h.Alias, "--dir", h.RemoteDir+"/kandev2")

	if r := d.Run("profile", "add", "nowhere", "--command", "some-agent", "--host", "nosuch"); r.Code == 0 ||
		!strings.Contains(r.Stderr, "unknown host nosuch") {
		t.Fatalf("a profile on an unknown host: exit %d, %s", r.Code, r.Stderr)
	}
	d.MustRun("profile", "add", "remote", "--command", "kandev-no-such-agent", "--host", "lb")
	d.MustRun("profile", "add", "anywhere", "--command", "kandev-no-such-agent", "--host", "auto")
	if p := decodeJSON[core.Profile](t, d.MustRun("profile", "show", "remote", "--json")); p.Host != "lb" {
		t.Fatalf("profile show --json: host %q", p.Host)
	}
	if out := d.MustRun("profile", "show", "remote"); !strings.Contains(out, "host:     lb") {
		t.Fatalf("profile show:\n%s", out)
	}
	d.MustRun("config", "set", "host", "lb2")

	hostOf := func(in api.CreateTaskInput) string {
		t.Helper()
		in.CWD = work
		if in.ParentID != "" {
			in.CWD = ""
		}
		return create(t, d, in).Host
	}
	if got := hostOf(api.CreateTaskInput{Title: "profile", Profile: "remote"}); got != "lb" {
		t.Fatalf("the profile's host: %q, want lb (over the config's lb2)", got)
	}
	if got := hostOf(api.CreateTaskInput{Title: "auto", Profile: "anywhere"}); got != "auto" {
		t.Fatalf("a profile's host auto: %q", got)
	}
	if got := hostOf(api.CreateTaskInput{Title: "flag", Profile: "remote", Host: "local"}); got != "" {
		t.Fatalf("--host local over the profile's: %q", got)
	}
	if got := hostOf(api.CreateTaskInput{Title: "flag", Profile: "remote", Host: "lb2"}); got != "lb2" {
		t.Fatalf("--host lb2 over the profile's: %q", got)
	}
	parent := create(t, d, api.CreateTaskInput{Title: "parent", CWD: work})
	if parent.Host != "lb2" {
		t.Fatalf("the config's host: %q", parent.Host)
	}
	if got := hostOf(api.CreateTaskInput{Title: "child", ParentID: parent.ID, Profile: "remote"}); got != "lb2" {
		t.Fatalf("a child of a task on lb2 with profile remote: %q, want its parent's", got)
	}

	// Started, the profile's task runs on lb: the agent's command is the
	// host's to find, so it fails there, not for want of it here.
	started := create(t, d, api.CreateTaskInput{Title: "run", CWD: work, Profile: "remote", Prompt: "hello", Start: true})
	failed := waitState(t, d, started.ID, core.SessionFailed)
	if failed.Host != "lb" || !strings.Contains(failed.Session.Error, "kandev-no-such-agent") {
		t.Fatalf("the profile's task started: host %q session %+v waiting %q", failed.Host, failed.Session, failed.Waiting)
	}
	d.Stop()
	homeGone(t, d, "after the daemon stopped")
	mastersGone(t, d.Home.Dir, "after the daemon stopped")
}
