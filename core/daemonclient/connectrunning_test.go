package daemonclient

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kandev/kandev/core"
)

// process starts a command that lives until the test ends; its pid.
func process(t *testing.T, name string, args ...string) int {
	t.Helper()
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

func shortHome(t *testing.T) core.Home {
	t.Helper()
	dir, err := os.MkdirTemp("", "kdc-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return core.Home{Dir: dir}
}

// A read never starts a daemon (ADR 0072): with none, the error names the
// home and kandev daemon start, and the executable is never run; a lock
// file naming a process that is not kandev serve (a pid reused) is none.
func TestConnectRunningStartsNone(t *testing.T) {
	home := shortHome(t)
	pid := process(t, "sleep", "60")
	if err := os.WriteFile(home.Lock(), []byte(strconv.Itoa(pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ConnectRunning(context.Background(), home)
	if core.CodeOf(err) != core.CodeUnavailable || !strings.Contains(err.Error(), "no kandev daemon is running for "+home.Dir) ||
		!strings.Contains(err.Error(), "kandev daemon start") {
		t.Fatalf("ConnectRunning: %v", err)
	}
	if _, err := os.Stat(home.Socket()); err == nil {
		t.Fatal("a socket appeared")
	}
}

// A daemon that holds the home but does not answer yet (recovering its
// runs) is waited for, not reported absent.
func TestConnectRunningWaitsForADaemonStarting(t *testing.T) {
	home := shortHome(t)
	// A process whose command line has "serve", as kandev serve's does.
	pid := process(t, "sh", "-c", "sleep 60", "serve")
	if err := os.WriteFile(home.Lock(), []byte(strconv.Itoa(pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	waitingForStart = func() {
		once.Do(func() {
			// It waits: now the daemon starts answering.
			ln, err := net.Listen("unix", home.Socket())
			if err != nil {
				t.Error(err)
				return
			}
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"version":"dev","schema_version":1,"running":0}`))
			})}
			go func() { _ = srv.Serve(ln) }()
			t.Cleanup(func() { _ = srv.Close() })
		})
	}
	t.Cleanup(func() { waitingForStart = nil })
	c, err := ConnectRunning(context.Background(), home)
	if err != nil {
		t.Fatalf("ConnectRunning: %v", err)
	}
	defer c.Close()
	if c.StartedHere() {
		t.Fatal("a read's client says it started the daemon")
	}
}
