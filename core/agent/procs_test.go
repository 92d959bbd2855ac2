package agent

import (
	"os/exec"
	"testing"
	"time"
)

func TestHomeID(t *testing.T) {
	a, b := HomeID("/home/x/kandev"), HomeID("/home/x/kandev/")
	if a == "" || a != b || len(a) != 16 {
		t.Fatalf("HomeID: %q, %q", a, b)
	}
	if HomeID("/home/y/kandev") == a || HomeID("") != "" {
		t.Fatal("different homes share an id, or no home has one")
	}
}

// MarkedProcs finds a process by its markers, the last value of each
// winning, and KillMarked ends it.
func TestMarkedProcsAndKill(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	cmd.Env = []string{SessionEnv + "=sold", HomeEnv + "=other", SessionEnv + "=stest1", HomeEnv + "=hometest"}
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	var found []Marked
	for _, m := range MarkedProcs() {
		if m.PID == cmd.Process.Pid {
			found = append(found, m)
		}
	}
	if len(found) != 1 || found[0].Session != "stest1" || found[0].Home != "hometest" {
		t.Fatalf("marked: %+v", found)
	}
	KillMarked(found, 5*time.Second)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("KillMarked left the process running")
	}
}

// The startup sweep reads every process's environment once.
func BenchmarkMarkedProcs(b *testing.B) {
	for i := 0; i < b.N; i++ {
		MarkedProcs()
	}
}
