package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemon/daemontest"
	"github.com/kandev/kandev/core/engine"
	"github.com/kandev/kandev/store"
)

// After Close, no goroutine of the engine, its agent runs (ACP
// connections, process watchers, teardowns) or its event subscribers is
// left: real mock agents run turns, one is still running at Close.
func TestEngineGoroutinesEnd(t *testing.T) {
	bin := daemontest.Binary(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(dir, "kandev.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t.Setenv("KANDEV_MOCK_STATE_DIR", filepath.Join(dir, "mock"))
	home := core.Home{Dir: dir}
	if err := home.Ensure(); err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(ctx, engine.Options{DB: db, Home: home, SelfExe: bin, Socket: filepath.Join(dir, "none.sock")})
	if err != nil {
		t.Fatal(err)
	}
	evctx, stopEvents := context.WithCancel(ctx)
	events, err := eng.Events(evctx, api.EventsInput{})
	if err != nil {
		t.Fatal(err)
	}
	done, err := eng.Tasks.CreateTask(ctx, api.CreateTaskInput{Title: "quick", CWD: os.TempDir(), Prompt: "mock: say hi", Start: true})
	if err != nil {
		t.Fatal(err)
	}
	busy, err := eng.Tasks.CreateTask(ctx, api.CreateTaskInput{Title: "busy", CWD: os.TempDir(), Prompt: "mock: hang", Start: true})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		a, _ := eng.Tasks.GetTask(ctx, done.ID)
		b, _ := eng.Tasks.GetTask(ctx, busy.ID)
		if a.Session != nil && !a.Session.State.Live() && b.Session != nil && b.Session.State == core.SessionRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("turns did not reach the expected states")
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopEvents()
	for range events {
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestMain(m *testing.M) { daemontest.Main(m) }
