package cmd

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
)

// lockedBuffer is stderr written by the client's notice while the test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A command whose daemon accepts the connection and never answers says
// on stderr that it is waiting, and where the daemon's log is, instead of
// sitting silent; Ctrl-C (the context) ends it.
func TestCommandSaysItWaitsForASilentDaemon(t *testing.T) {
	release := make(chan struct{})
	home := fakeDaemon(t, func(http.ResponseWriter, *http.Request) { <-release })
	t.Cleanup(func() { close(release) }) // the handlers' goroutines end

	f := testFactory(t, "", nil)
	errOut := &lockedBuffer{}
	f.IO.ErrOut, f.slowAfter = errOut, time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		root := NewCmdRoot(f)
		root.SetArgs([]string{"--home", home, "task", "show", "t1"})
		done <- root.ExecuteContext(ctx)
	}()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(errOut.String(), "the daemon has not answered") {
		if time.Now().After(deadline) {
			t.Fatalf("no notice on stderr: %q", errOut.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := errOut.String(); !strings.Contains(got, "still waiting (Ctrl-C gives up; its log: "+home) {
		t.Fatalf("stderr %q does not say how to give up or where the log is", got)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("task show succeeded against a daemon that never answered")
	}
}

// FakeDaemon is fakeDaemon for the tests of package cmd_test.
var FakeDaemon = fakeDaemon

// fakeDaemon serves handler on a new home's socket, as a daemon would, and
// returns the home's directory.
func fakeDaemon(t *testing.T, handler http.HandlerFunc) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kd-") // short: a socket path has 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ln, err := net.Listen("unix", core.Home{Dir: dir}.Socket())
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return dir
}
