package doctor

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
)

func TestCheckSandboxes(t *testing.T) {
	profiles := []core.Profile{
		{Name: "plain"},
		{Name: "boxed", Command: "true", Sandbox: core.SandboxBwrap},
		{Name: "contained", Sandbox: core.SandboxDocker},
	}
	t.Run("none installed", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		modes, per := checkSandboxes(context.Background(), Options{Timeout: DefaultTimeout}, profiles)
		if len(modes) != 3 {
			t.Fatalf("modes %+v", modes)
		}
		for _, m := range modes {
			if m.Found || m.Works || m.Hint == "" {
				t.Errorf("%s: %+v", m.Mode, m)
			}
		}
		if len(per) != 2 || per[0].CanStart || !strings.Contains(per[0].Why, "bubblewrap") || per[1].CanStart {
			t.Fatalf("profiles %+v", per)
		}
	})
	t.Run("bwrap", func(t *testing.T) {
		if _, err := exec.LookPath("bwrap"); err != nil {
			t.Skip("bubblewrap is not installed")
		}
		modes, per := checkSandboxes(context.Background(), Options{Timeout: DefaultTimeout}, profiles[:2])
		if !modes[0].Found || modes[0].Version == "" {
			t.Fatalf("bwrap %+v", modes[0])
		}
		if !modes[0].Works {
			t.Skipf("bwrap cannot run here: %s", modes[0].Error)
		}
		// bwrap works, but true is no agent: it exits without answering
		// initialize, and doctor says so rather than "can start".
		if per[0].CanStart || !strings.Contains(per[0].Why, "the agent does not start inside: initialize: agent exited") {
			t.Fatalf("profile %+v", per[0])
		}
	})
}
