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
		{Name: "boxed", Sandbox: core.SandboxBwrap},
		{Name: "contained", Sandbox: core.SandboxDocker},
	}
	t.Run("none installed", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		modes, per := checkSandboxes(context.Background(), profiles)
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
		modes, per := checkSandboxes(context.Background(), profiles[:2])
		if !modes[0].Found || modes[0].Version == "" {
			t.Fatalf("bwrap %+v", modes[0])
		}
		if modes[0].Works != per[0].CanStart {
			t.Fatalf("bwrap works %v, profile can start %v (%s)", modes[0].Works, per[0].CanStart, per[0].Why)
		}
	})
}
