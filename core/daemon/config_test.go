package daemon_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// The daemon takes its idle timeout from config.toml when the environment
// does not set one: the held agent ends after the file's 400ms, not the
// built-in 15 minutes.
func TestIdleTimeoutFromConfigFile(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte("idle_timeout = \"400ms\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := daemontest.Start(t, daemontest.WithEnv("KANDEV_CONFIG="+cfg))
	task := heldParent(t, d, "mock: say one")
	first := task.Session
	daemontest.Eventually(t, wait, "the idle run to end", func() bool {
		s := get(t, d, task.ID).Session
		return s.ID == first.ID && s.State == core.SessionCompleted
	})
	if s := get(t, d, task.ID).Session; !strings.Contains(s.EndReason, "idle for 400ms") {
		t.Fatalf("end reason %q", s.EndReason)
	}
}

// An unknown key in config.toml stops the daemon's start with the key and
// the file named, rather than running with a setting silently ignored.
func TestDaemonRefusesUnknownConfigKey(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte("idle_timout = \"1m\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	home, err := os.MkdirTemp("", "kd-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(home)
	// The deadline only keeps a daemon that would serve from hanging the
	// run; the assertion is on its exit and message.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, daemontest.Binary(t), "serve", "--home", home)
	cmd.Env = append(os.Environ(), "KANDEV_CONFIG="+cfg)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), `unknown key "idle_timout"`) || !strings.Contains(string(out), cfg) {
		t.Fatalf("serve: %v: %s", err, out)
	}
}
