package store

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"testing"
	"time"
)

// openFreshDB opens a fresh, fully migrated database in a temp dir.
func openFreshDB(t testing.TB) *DB {
	t.Helper()
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "kandev.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// openUnmigrated wraps a database file without applying any migration, so
// a test can build an old schema with MigrateTo.
func openUnmigrated(t testing.TB, path string) *DB {
	t.Helper()
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	sdb, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	return &DB{Queries: Queries{q: sdb}, sql: sdb, path: path}
}

// i2Time is a fixed instant with nanoseconds, so round trips show precision.
var i2Time = time.Date(2026, 5, 6, 7, 8, 9, 123456789, time.UTC)

var i2Seq int

// i2Task is a valid task row; parent may be "".
func i2Task(id, parent string) Task {
	i2Seq++
	at := i2Time.Add(time.Duration(i2Seq) * time.Millisecond)
	return Task{ID: id, Title: "task " + id, Description: "about " + id, ParentID: parent, CWD: "/src",
		Profile: "mock", Status: "todo", CreatedBy: "person:operator", CreatedAt: at, UpdatedAt: at}
}

func mustInsert(t testing.TB, db *DB, tasks ...Task) {
	t.Helper()
	for _, tk := range tasks {
		if err := db.InsertTask(context.Background(), tk); err != nil {
			t.Fatalf("insert %s: %v", tk.ID, err)
		}
	}
}

func pragmaString(t testing.TB, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, name string) string {
	t.Helper()
	var v any
	if err := q.QueryRowContext(context.Background(), "PRAGMA "+name).Scan(&v); err != nil {
		t.Fatalf("PRAGMA %s: %v", name, err)
	}
	return fmt.Sprint(v)
}
