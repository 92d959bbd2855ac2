package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
)

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// Issue 20: doctor's --version probe ends what the command started (in
// its group or setsid), and keeps only a few KB of what it prints.
func TestVersionProbeLeavesNothingAndIsBounded(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc")
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	exe := filepath.Join(dir, "fake-agent")
	script := "#!/bin/sh\necho 'fake-agent 1.2.3'\n" +
		"sleep 300 </dev/null >/dev/null 2>&1 &\necho $! >> " + pidFile + "\n" +
		"setsid sleep 300 </dev/null >/dev/null 2>&1 &\necho $! >> " + pidFile + "\n" +
		"head -c 2000000 /dev/zero | tr '\\0' x\n"
	if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if v := version(context.Background(), exe); v != "fake-agent 1.2.3" {
		t.Fatalf("version %q", v)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, _ := strconv.Atoi(f)
		pids = append(pids, pid)
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	}
	if len(pids) != 2 {
		t.Fatalf("pids %v", pids)
	}
	deadline := time.Now().Add(10 * time.Second) // a bound on the wait, not a timing claim
	for _, p := range pids {
		for alive(p) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d of the probe outlived it", p)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// The whole profile check, --version and the ACP handshake both, leaves
// nothing of a command that starts helpers and never answers.
func TestProfileCheckLeavesNothing(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc")
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	exe := filepath.Join(dir, "fake-agent")
	script := "#!/bin/sh\n" +
		"setsid sleep 300 </dev/null >/dev/null 2>&1 &\necho $! >> " + pidFile + "\n" +
		"if [ \"$1\" = --version ]; then echo 'fake-agent 2'; exit 0; fi\n" +
		"exec sleep 300\n"
	if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	pr := checkProfile(context.Background(), Options{Getenv: func(string) string { return "" }, Timeout: 500 * time.Millisecond},
		core.Profile{Name: "fake", Source: "user", Command: exe})
	if pr.Usable || pr.Version != "fake-agent 2" || !pr.Found {
		t.Fatalf("profile check %+v", pr)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pids := strings.Fields(string(b))
	if len(pids) != 2 {
		t.Fatalf("pids %v", pids)
	}
	deadline := time.Now().Add(10 * time.Second) // a bound on the wait, not a timing claim
	for _, f := range pids {
		p, _ := strconv.Atoi(f)
		t.Cleanup(func() { _ = syscall.Kill(p, syscall.SIGKILL) })
		for alive(p) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d of the profile check outlived it", p)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
