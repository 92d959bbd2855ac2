package daemonclient

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
)

// A command's first request is the only one it sends to a running daemon:
// Connect finds the daemon by connecting to its socket and hands that
// connection to the command's request, rather than a version round trip
// before it (issue 14: ~1 ms of every command).
func TestConnectSendsNoRequestOfItsOwn(t *testing.T) {
	var (
		mu    sync.Mutex
		paths []string
		conns = map[string]bool{}
	)
	home := fakeDaemon(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path)
		conns[r.RemoteAddr] = true
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"t1","title":"one","status":"todo"}`))
	})

	// A daemon answers, so the executable is never run.
	c, err := Connect(context.Background(), home, filepath.Join(home.Dir, "no-such-kandev"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	task, err := c.GetTask(context.Background(), "t1")
	if err != nil || task.ID != "t1" {
		t.Fatalf("GetTask: %+v, %v", task, err)
	}
	if _, err := c.GetTask(context.Background(), "t1"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) != 2 || paths[0] != "GET /v1/tasks/t1" || paths[1] != "GET /v1/tasks/t1" {
		t.Fatalf("the daemon got %q, want the two GET /v1/tasks/t1 alone", paths)
	}
	if len(conns) != 1 {
		t.Fatalf("%d connections, want Connect's one, reused", len(conns))
	}
}

// With no daemon listening (no socket, or a socket file a dead daemon left
// behind), Connect starts one: here the executable does not exist, and the
// error is the failed start.
func TestConnectStartsADaemonWhenNoneListens(t *testing.T) {
	for _, stale := range []bool{false, true} {
		dir, err := os.MkdirTemp("", "kdc-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		home := core.Home{Dir: dir}
		if stale {
			ln, err := net.Listen("unix", home.Socket())
			if err != nil {
				t.Fatal(err)
			}
			ln.(*net.UnixListener).SetUnlinkOnClose(false)
			ln.Close()
			if _, err := os.Stat(home.Socket()); err != nil {
				t.Fatal(err)
			}
		}
		exe := filepath.Join(dir, "no-such-kandev")
		_, err = Connect(context.Background(), home, exe)
		if err == nil || !strings.HasPrefix(err.Error(), "start the kandev daemon: fork/exec "+exe) {
			t.Fatalf("stale socket %v: Connect = %v, want the failed start of %s", stale, err, exe)
		}
	}
}

// fakeDaemon serves handler on a new home's socket, as a daemon would.
func fakeDaemon(t *testing.T, handler http.HandlerFunc) core.Home {
	t.Helper()
	dir, err := os.MkdirTemp("", "kdc-") // short: a socket path has 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	home := core.Home{Dir: dir}
	ln, err := net.Listen("unix", home.Socket())
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return home
}

// stuckDaemon accepts connections and never answers, as a stopped or
// deadlocked daemon does.
func stuckDaemon(t *testing.T) core.Home {
	release := make(chan struct{})
	home := fakeDaemon(t, func(http.ResponseWriter, *http.Request) { <-release })
	t.Cleanup(func() { close(release) }) // the handlers' goroutines end
	return home
}

// A daemon that accepts the connection and never answers: the request
// waits (it is not given up on), and OnSlow says so once, while it waits.
func TestOnSlowWhenTheDaemonDoesNotAnswer(t *testing.T) {
	home := stuckDaemon(t)
	c, err := Connect(context.Background(), home, filepath.Join(home.Dir, "no-such-kandev"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	told := make(chan time.Duration, 2)
	c.OnSlow(time.Millisecond, func(waited time.Duration) { told <- waited })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.GetTask(ctx, "t1")
		done <- err
	}()
	select {
	case waited := <-told:
		if waited != time.Millisecond {
			t.Fatalf("told after %s, want the 1ms asked for", waited)
		}
	case err := <-done:
		t.Fatalf("the request ended before the notice: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("no notice while the daemon does not answer")
	}
	select {
	case err := <-done:
		t.Fatalf("the request gave up by itself: %v", err)
	default:
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("after Ctrl-C the request ends with %v, want context.Canceled", err)
	}
	if len(told) != 0 {
		t.Fatal("told more than once for one request")
	}
}
