package sshtest_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kandev/kandev/internal/sshtest"
)

// TestLoopbackHost logs in with the test's key and known_hosts, and shows
// the host key really is checked: a known_hosts without it refuses.
func TestLoopbackHost(t *testing.T) {
	h := sshtest.Start(t)
	out, err := h.Command("id", "-un").CombinedOutput()
	if err != nil {
		t.Fatalf("ssh: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != sshtest.RemoteUser {
		t.Fatalf("logged in as %q, want %q", got, sshtest.RemoteUser)
	}
	// Same host, an empty known_hosts: StrictHostKeyChecking refuses.
	cmd := exec.Command("ssh", "-F", h.Config, "-o", "UserKnownHostsFile=/dev/null", h.Alias, "true")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "Host key verification failed") {
		t.Fatalf("unknown host key accepted: %v\n%s", err, out)
	}
	// A connection open across Stop ends with it, as when a machine goes
	// away: sshd's per-connection processes are not in its group.
	sock := filepath.Join(t.TempDir(), "m.sock")
	master := exec.Command("ssh", "-F", h.Config, "-f", "-N", "-o", "ControlMaster=yes", "-o", "ControlPath="+sock, h.Alias)
	if out, err := master.CombinedOutput(); err != nil {
		t.Fatalf("master: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ssh", "-o", "ControlPath="+sock, "-O", "exit", h.Alias).Run() })
	h.Stop()
	if out, err := h.Command("true").CombinedOutput(); err == nil {
		t.Fatalf("login after Stop: %s", out)
	}
	if out, err := exec.Command("ssh", "-F", h.Config, "-o", "ControlPath="+sock, "-o", "ControlMaster=no", h.Alias, "true").CombinedOutput(); err == nil {
		t.Fatalf("a connection open before Stop still works: %s", out)
	}
	h.Start()
	if out, err := h.Command("true").CombinedOutput(); err != nil {
		t.Fatalf("login after restart: %v\n%s", err, out)
	}
}
