package agent

import (
	"context"
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
