package hosts

import (
	"os/exec"
	"testing"
)

// TestConnectionLost: ssh's own status (255) and a kill by a signal are a
// lost connection; the remote command's status and a clean exit are not.
func TestConnectionLost(t *testing.T) {
	for _, c := range []struct {
		script string
		want   bool
	}{
		{"exit 0", false},
		{"exit 3", false},
		{"exit 255", true},
		{"kill -KILL $$", true},
	} {
		err := exec.Command("sh", "-c", c.script).Run()
		if got := connectionLost(err); got != c.want {
			t.Errorf("%s (%v): lost %v, want %v", c.script, err, got, c.want)
		}
	}
}
