package daemon_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
)

// smallDisk mounts a tmpfs of size bytes for a test, or skips the test
// where mounting is not allowed (not root).
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kdfull-")
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		os.Remove(dir)
		t.Skipf("cannot mount a small tmpfs here (%v); CI runs this as root", err)
	}
	t.Cleanup(func() {
		_ = syscall.Unmount(dir, syscall.MNT_DETACH)
		os.Remove(dir)
	})
	return dir
}

// fill writes a file until the disk is full and returns its path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return p
			}
			t.Fatal(err)
		}
	}
}

// A message acknowledged before the disk filled up cannot be delivered:
// the task says why (its waiting reason) instead of spinning on it, and
// the message goes through by itself once there is space again.
func TestDiskFullWaitsThenStarts(t *testing.T) {
	disk := smallDisk(t, "64m")
	gate := filepath.Join(t.TempDir(), "go")
	d := daemontest.Start(t, daemontest.WithHome(filepath.Join(disk, "home")))
	task := create(t, d, api.CreateTaskInput{Title: "full disk", Prompt: "mock: say one\nmock: waitfile " + gate, Start: true})
	waitSaid(t, d, task.ID, "one")
	message(t, d, task.ID, "mock: say two") // acknowledged: queued behind the turn
	filler := fill(t, disk)
	if err := os.WriteFile(gate, nil, 0o600); err != nil { // the turn ends
		t.Fatal(err)
	}
	var got core.Task
	daemontest.Eventually(t, wait, "the task to say why its message waits", func() bool {
		got = get(t, d, task.ID)
		return strings.Contains(got.Waiting, "disk is full")
	})
	t.Logf("waiting: %s", got.Waiting)
	if got.WaitCause != core.WaitDelivery {
		t.Errorf("wait cause %q, want %q", got.WaitCause, core.WaitDelivery)
	}
	if n := strings.Count(d.Log(), "deliver queued message"); n > 10 {
		t.Fatalf("%d failed deliveries logged already: the turn loop spins on the full disk", n)
	}
	if got.Queued != 1 {
		t.Fatalf("queued %d, want the acknowledged message kept", got.Queued)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitSaid(t, d, task.ID, "two")
	daemontest.Eventually(t, wait, "the waiting reason to clear", func() bool { return get(t, d, task.ID).Waiting == "" })
}
