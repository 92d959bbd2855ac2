package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/engine"
	"github.com/kandev/kandev/store"
)

// Engine throughput, in process: create (store write + refresh + event),
// list from the cache, and the start-up load of a large database.

// benchEngineHome seeds n tasks (one root in ten) straight into a new
// store and returns its path and a working directory.
func benchEngineHome(b *testing.B, n int) (dbPath, cwd string) {
	b.Helper()
	dir := b.TempDir()
	dbPath, cwd = filepath.Join(dir, "kandev.db"), filepath.Join(dir, "work")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	db, err := store.Open(ctx, dbPath)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	base := time.Now().Add(-time.Hour).UTC()
	err = db.Tx(ctx, func(tx *store.Tx) error {
		for i := range n {
			t := store.Task{ID: fmt.Sprintf("b%05d", i), Title: fmt.Sprintf("Task %d: split the auth module", i),
				CWD: cwd, Profile: "mock", Status: "todo", Autopilot: i%3 == 0, CreatedBy: "person:operator",
				CreatedAt: base.Add(time.Duration(i) * time.Microsecond), Assignee: "role:mock"}
			t.UpdatedAt = t.CreatedAt
			if i%10 != 0 {
				t.ParentID = fmt.Sprintf("b%05d", i-i%10)
			}
			if err := tx.InsertTask(ctx, t); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return dbPath, cwd
}

func benchEngine(b *testing.B, dbPath string) *engine.Engine {
	b.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dbPath)
	if err != nil {
		b.Fatal(err)
	}
	eng, err := engine.New(ctx, engine.Options{DB: db, Home: core.Home{Dir: filepath.Dir(dbPath)}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { eng.Close(); db.Close() })
	return eng
}

// BenchmarkEngineCreateTask creates root tasks one after another.
func BenchmarkEngineCreateTask(b *testing.B) {
	dbPath, cwd := benchEngineHome(b, 0)
	eng := benchEngine(b, dbPath)
	ctx := context.Background()
	for b.Loop() {
		if _, err := eng.Tasks.CreateTask(ctx, api.CreateTaskInput{Title: "Split the auth module", CWD: cwd}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
}

// BenchmarkEngineListTasks100k lists 100,000 cached tasks: the engine's
// share of `kandev task list --json`.
func BenchmarkEngineListTasks100k(b *testing.B) {
	dbPath, _ := benchEngineHome(b, 100_000)
	eng := benchEngine(b, dbPath)
	ctx := context.Background()
	for b.Loop() {
		ts, err := eng.Tasks.ListTasks(ctx, api.ListTasksInput{})
		if err != nil || len(ts) != 100_000 {
			b.Fatalf("%d tasks, %v", len(ts), err)
		}
	}
}

// BenchmarkEngineStart100k opens an engine over 100,000 tasks: what the
// first command after the daemon starts waits for.
func BenchmarkEngineStart100k(b *testing.B) {
	dbPath, _ := benchEngineHome(b, 100_000)
	ctx := context.Background()
	for b.Loop() {
		db, err := store.Open(ctx, dbPath)
		if err != nil {
			b.Fatal(err)
		}
		eng, err := engine.New(ctx, engine.Options{DB: db, Home: core.Home{Dir: filepath.Dir(dbPath)}})
		if err != nil {
			b.Fatal(err)
		}
		eng.Close()
		db.Close()
	}
}
