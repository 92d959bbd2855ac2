//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSoakTiny runs a tiny soak (3 sessions on this machine, one kill -9
// of the daemon mid-run) so that the oracle itself stays tested: every
// check must hold. The workload waits on conditions (what the agents said),
// never on time; -wait only bounds a hang. KANDEV_TEST_SOAK=1 runs it.
func TestSoakTiny(t *testing.T) {
	if os.Getenv("KANDEV_TEST_SOAK") == "" {
		t.Skip("KANDEV_TEST_SOAK=1 runs the tiny soak")
	}
	bin := filepath.Join(t.TempDir(), "kandev")
	if out, err := exec.Command("go", "build", "-o", bin, "../kandev").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	rep, err := runSoak(soakConfig{seed: 39, sessions: 3, hosts: 1, kills: 1, wait: 2 * time.Minute, warm: true, bin: bin})
	var b strings.Builder
	if rep != nil {
		rep.print(&b)
	}
	t.Log(b.String())
	if err != nil {
		t.Fatal(err)
	}
	if rep.violations() != 0 {
		t.Fatalf("%d violations", rep.violations())
	}
	if rep.kills != 1 {
		t.Fatalf("kill -9s: %d, want 1", rep.kills)
	}
	for _, want := range []string{"every turn the driver started ended", "each recorded prompt has exactly one outcome",
		"no session's process outlives its stop", "database passes PRAGMA integrity_check"} {
		found := false
		for _, c := range rep.checks {
			found = found || strings.HasPrefix(c.name, want)
		}
		if !found {
			t.Errorf("no check %q ran", want)
		}
	}
}
