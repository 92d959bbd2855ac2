package engine

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/store"
)

// A refresh that returns after a commit leaves the cache at least as new as
// that commit, even when an older refresh of the same task read the store
// before the commit and writes the cache after it. Unserialised, the older
// view won (seen as a task stuck in_progress after its turn had ended).
func TestRefreshNeverGoesBackInTime(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := store.Open(ctx, filepath.Join(dir, "kandev.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e, err := New(ctx, Options{DB: db, Home: core.Home{Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cwd := filepath.Join(dir, "work")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	task, err := e.Tasks.CreateTask(ctx, api.CreateTaskInput{Title: "raced", CWD: cwd})
	if err != nil {
		t.Fatal(err)
	}
	if task.Status != core.StatusTodo {
		t.Fatalf("new task is %s", task.Status)
	}

	// The first refresh reads (todo), then pauses until the second refresh
	// is done, or for a moment when the second cannot start before it.
	oldRead, newDone := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	e.k.cache.afterStoreRead = func(string) {
		if calls.Add(1) != 1 {
			return
		}
		close(oldRead)
		select {
		case <-newDone:
		case <-time.After(300 * time.Millisecond):
		}
	}
	oldDone := make(chan struct{})
	go func() { e.k.refreshQuiet(task.ID); close(oldDone) }()
	<-oldRead
	if err := db.SetTaskStatus(ctx, task.ID, string(core.StatusReview), time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	go func() { e.k.refreshQuiet(task.ID); close(newDone) }()
	<-newDone
	<-oldDone
	if got, _ := e.k.cached(task.ID); got.Status != core.StatusReview {
		t.Fatalf("cache says %s after a refresh that followed the commit of review", got.Status)
	}
}
