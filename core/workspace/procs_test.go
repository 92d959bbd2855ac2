package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// alive reports whether pid runs (a zombie has ended).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// readPids waits for the script's pid file and reads it.
func readPids(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the script wrote no pids: %v", err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	}
	if len(pids) != 2 {
		t.Fatalf("pids %v", pids)
	}
	return pids
}

// waitGone waits, bounded, until none of pids runs.
func waitGone(t *testing.T, what string, pids []int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second) // a bound on the wait, not a timing claim
	for {
		var left []int
		for _, p := range pids {
			if alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: processes %v outlived it", what, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Issue 20: a setup's children, backgrounded or setsid, end with it,
// whether it fails, succeeds or times out.
func TestRunSetupLeavesNoProcessBehind(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc")
	}
	for _, tc := range []struct {
		name, exit string
		timeout    time.Duration
	}{{"failed", "exit 1\n", 0}, {"succeeded", "exit 0\n", 0}, {"timed out", "sleep 60\n", 500 * time.Millisecond}} {
		repo := newRepo(t)
		m := &Manager{SetupTimeout: tc.timeout}
		wt := create(t, m, repo, "t1", "")
		pidFile := filepath.Join(t.TempDir(), "pids")
		writeScript(t, wt.Dir, "sleep 300 </dev/null >/dev/null 2>&1 &\necho $! >> "+pidFile+"\n"+
			"setsid sleep 300 </dev/null >/dev/null 2>&1 &\necho $! >> "+pidFile+"\n"+tc.exit, 0o755)
		_, err := m.RunSetup(context.Background(), wt, nil)
		var se *SetupError
		if (tc.name == "succeeded") != (err == nil) || (err != nil && !errors.As(err, &se)) {
			t.Fatalf("%s: err %v", tc.name, err)
		}
		waitGone(t, tc.name+" setup", readPids(t, pidFile))
	}
}
