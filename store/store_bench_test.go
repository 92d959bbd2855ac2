package store

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Store throughput: one task per write transaction (what a create costs),
// bulk inserts, and the reads a daemon start and a create's refresh do.

func benchTask(i int, parent string) Task {
	at := i2Time.Add(time.Duration(i) * time.Millisecond)
	t := Task{ID: fmt.Sprintf("b%05d", i), Title: fmt.Sprintf("Task %d: split the auth module into token and session parts", i),
		ParentID: parent, CWD: "/home/user/src/project", Profile: "claude", Status: "todo", Autopilot: i%3 == 0,
		CreatedBy: "person:operator", CreatedAt: at, UpdatedAt: at}
	if i%4 == 0 {
		t.Description = "Keep the public API; move parsing into its own file and add tests for it."
	}
	return t
}

// seedBench writes n tasks (one root in ten) in one transaction.
func seedBench(b *testing.B, db *DB, n int) {
	b.Helper()
	ctx := context.Background()
	err := db.Tx(ctx, func(tx *Tx) error {
		for i := range n {
			parent := ""
			if i%10 != 0 {
				parent = fmt.Sprintf("b%05d", i-i%10)
			}
			if err := tx.InsertTask(ctx, benchTask(i, parent)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

func reportPerSecond(b *testing.B, perOp int, unit string) {
	b.ReportMetric(float64(b.N*perOp)/b.Elapsed().Seconds(), unit)
}

// BenchmarkStoreCreateTask is one task per write transaction, as the
// engine's CreateTask does it.
func BenchmarkStoreCreateTask(b *testing.B) {
	db := openFreshDB(b)
	ctx := context.Background()
	i := 0
	for b.Loop() {
		t := benchTask(i, "")
		i++
		if err := db.Tx(ctx, func(tx *Tx) error { return tx.InsertTask(ctx, t) }); err != nil {
			b.Fatal(err)
		}
	}
	reportPerSecond(b, 1, "tasks/s")
}

// BenchmarkStoreInsertTasksBulk is 1,000 tasks per transaction.
func BenchmarkStoreInsertTasksBulk(b *testing.B) {
	db := openFreshDB(b)
	ctx := context.Background()
	next := 0
	for b.Loop() {
		err := db.Tx(ctx, func(tx *Tx) error {
			for range 1000 {
				if err := tx.InsertTask(ctx, benchTask(next, "")); err != nil {
					return err
				}
				next++
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	reportPerSecond(b, 1000, "tasks/s")
}

// BenchmarkStoreTaskViews10k loads every task's view: what a daemon start
// does (per 10,000 tasks).
func BenchmarkStoreTaskViews10k(b *testing.B) {
	db := openFreshDB(b)
	seedBench(b, db, 10_000)
	ctx := context.Background()
	for b.Loop() {
		vs, err := db.TaskViews(ctx, nil)
		if err != nil || len(vs) != 10_000 {
			b.Fatalf("%d views, %v", len(vs), err)
		}
	}
	reportPerSecond(b, 10_000, "tasks/s")
}

// BenchmarkStoreListTasks10k lists the task rows alone.
func BenchmarkStoreListTasks10k(b *testing.B) {
	db := openFreshDB(b)
	seedBench(b, db, 10_000)
	ctx := context.Background()
	for b.Loop() {
		ts, err := db.ListTasks(ctx, TaskFilter{})
		if err != nil || len(ts) != 10_000 {
			b.Fatalf("%d tasks, %v", len(ts), err)
		}
	}
	reportPerSecond(b, 10_000, "tasks/s")
}

// BenchmarkStoreTaskView reads one view in a 10,000-task database: the
// refresh after every change.
func BenchmarkStoreTaskView(b *testing.B) {
	db := openFreshDB(b)
	seedBench(b, db, 10_000)
	ctx := context.Background()
	i := 0
	for b.Loop() {
		id := fmt.Sprintf("b%05d", i%10_000)
		i += 7
		if _, err := db.TaskView(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
}
