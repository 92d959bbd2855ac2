package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An agent that never answers initialize gets the timeout as its error,
// and it and the helper it started are gone when Initialize returns.
func TestInitializeTimesOutAndTearsDown(t *testing.T) {
	id := "handshake-test-" + t.Name()
	_, err := Initialize(context.Background(), Spec{Command: "/bin/sh", Args: []string{"-c", "sleep 600 & exec sleep 600"}, SessionID: id}, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "initialize: agent did not answer in time") {
		t.Fatalf("err = %v", err)
	}
	if left := SessionProcs(id); len(left) != 0 {
		t.Fatalf("processes left after the handshake: %v", left)
	}
}

// A command that exits at once says how it ended.
func TestInitializeAgentExits(t *testing.T) {
	_, err := Initialize(context.Background(), Spec{Command: "/bin/sh", Args: []string{"-c", "echo bye >&2; exit 3"}}, 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("err = %v", err)
	}
}

// A command that stops reading its input before it exits (a shell whose
// command is not found on a host, behind ssh) fails the write of
// initialize with a broken pipe while its output is still open: the
// error says how the command ended, not the SDK's "broken pipe".
func TestOpenAgentClosedItsInput(t *testing.T) {
	spec := Spec{Command: "/bin/sh", Args: []string{"-c", "exec 0<&-; sleep 0.5; echo 'no-such-agent: not found' >&2; exit 127"},
		LogPath: filepath.Join(t.TempDir(), "agent.log")}
	r, err := Start(spec, discardHandler{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Terminate(handshakeGrace)
	// The shell has closed its input before initialize is written.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d/fd/0", r.PID())); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent never closed its input")
		}
		time.Sleep(time.Millisecond)
	}
	err = r.Open(context.Background())
	if err == nil || !strings.Contains(err.Error(), "exit status 127") || !strings.Contains(err.Error(), "no-such-agent: not found") {
		t.Fatalf("err = %v", err)
	}
}
