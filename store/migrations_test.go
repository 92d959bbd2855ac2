package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// runKnownBugs runs tests of bugs reported but not fixed yet.

func embeddedMigrationCount(t *testing.T) int {
	t.Helper()
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".sql") {
			n++
		}
	}
	return n
}

func userVersion(t *testing.T, db *DB) int {
	t.Helper()
	var v int
	if err := db.sql.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestFreshDatabaseHasEveryMigration(t *testing.T) {
	db := openFreshDB(t)
	n := embeddedMigrationCount(t)
	if n < 2 {
		t.Fatalf("only %d embedded migrations", n)
	}
	if got := SchemaVersion(); got != n {
		t.Fatalf("SchemaVersion() = %d, want the %d embedded migrations", got, n)
	}
	if got := userVersion(t, db); got != n {
		t.Fatalf("fresh database at user_version %d, want %d", got, n)
	}
	for _, want := range []struct{ kind, name string }{
		{"table", "tasks"}, {"table", "profiles"}, {"table", "sessions"}, {"table", "messages"},
		{"table", "queue"}, {"table", "tokens"}, {"table", "review_comments"}, {"table", "task_links"},
		{"trigger", "tasks_autopilot_fixed"}, {"trigger", "tasks_parent_fixed"},
		{"index", "tasks_parent"}, {"index", "queue_task"}, {"index", "messages_pending_question"},
	} {
		var name string
		err := db.sql.QueryRow(`SELECT name FROM sqlite_master WHERE type = ? AND name = ?`, want.kind, want.name).Scan(&name)
		if err != nil {
			t.Errorf("%s %s missing: %v", want.kind, want.name, err)
		}
	}
}

func TestReopenIsANoOp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kandev.db")
	ctx := context.Background()
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	mustInsert(t, db, i2Task("aaaaaa", ""))
	db.Close()
	db, err = Open(ctx, path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	if _, err := db.GetTask(ctx, "aaaaaa"); err != nil {
		t.Fatal(err)
	}
	if got := userVersion(t, db); got != SchemaVersion() {
		t.Fatalf("user_version %d after reopen", got)
	}
}

// Every pooled connection must run with WAL, foreign keys and a busy
// timeout, not just the first one.
func TestPragmasOnEveryPooledConnection(t *testing.T) {
	db := openFreshDB(t)
	ctx := context.Background()
	const n = 6
	var conns []interface{ Close() error }
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	seen := map[string]bool{}
	for i := range n {
		// Holding every connection open forces the pool to open new ones.
		c, err := db.sql.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		var addr string
		if err := c.Raw(func(dc any) error { addr = fmt.Sprintf("%p", dc); return nil }); err != nil {
			t.Fatal(err)
		}
		seen[addr] = true
		for pragma, want := range map[string]string{
			"journal_mode": "wal", "foreign_keys": "1", "busy_timeout": "10000", "synchronous": "1",
		} {
			if got := pragmaString(t, c, pragma); got != want {
				t.Errorf("connection %d: PRAGMA %s = %s, want %s", i, pragma, got, want)
			}
		}
	}
	if len(seen) != n {
		t.Fatalf("expected %d distinct connections, got %d", n, len(seen))
	}
}

// The upgrade path: a database written at schema version 1, with rows,
// opened by this kandev keeps its rows and gains every later migration.
func TestUpgradeFromVersion1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kandev.db")
	old := openUnmigrated(t, path)
	if err := old.MigrateTo(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := userVersion(t, old); got != 1 {
		t.Fatalf("user_version %d after MigrateTo(1)", got)
	}
	var sessions int
	if err := old.sql.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'sessions'`).Scan(&sessions); err != nil || sessions != 0 {
		t.Fatalf("a version-1 database already has sessions (%d, %v)", sessions, err)
	}
	// Rows as the version-1 binary wrote them: its own column list.
	for _, q := range []string{
		`INSERT INTO tasks (id, title, description, parent_id, cwd, profile, status, autopilot, created_by, created_at, updated_at)
			VALUES ('root22', 'Split the auth module', 'desc', NULL, '/src', 'claude', 'in_progress', 1, 'person:operator', 100, 200)`,
		`INSERT INTO tasks (id, title, description, parent_id, cwd, profile, status, autopilot, created_by, created_at, updated_at, archived_at)
			VALUES ('kid222', 'child', '', 'root22', '/src', 'mock', 'todo', 0, 'task:root22', 300, 300, 400)`,
		`INSERT INTO profiles (name, command, args, env, mcp, created_at)
			VALUES ('plain', 'my-agent', '["--acp"]', '["K=V"]', 0, 500)`,
	} {
		if _, err := old.sql.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	db, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("open a version-1 database: %v", err)
	}
	defer db.Close()
	if got := userVersion(t, db); got != SchemaVersion() {
		t.Fatalf("upgraded to user_version %d, want %d", got, SchemaVersion())
	}
	root, err := db.GetTask(ctx, "root22")
	if err != nil {
		t.Fatal(err)
	}
	if root.Title != "Split the auth module" || root.Description != "desc" || root.ParentID != "" || !root.Autopilot ||
		root.Status != "in_progress" || root.Profile != "claude" || root.CreatedAt.UnixNano() != 100 ||
		root.UpdatedAt.UnixNano() != 200 || root.Archived() {
		t.Fatalf("root after upgrade: %+v", root)
	}
	if root.Halted || root.SessionID != "" || root.TitlePending {
		t.Fatalf("columns added after version 1 do not default to empty: %+v", root)
	}
	kid, err := db.GetTask(ctx, "kid222")
	if err != nil {
		t.Fatal(err)
	}
	if kid.ParentID != "root22" || kid.Autopilot || kid.ArchivedAt.UnixNano() != 400 || kid.CreatedBy != "task:root22" {
		t.Fatalf("child after upgrade: %+v", kid)
	}
	p, err := db.GetProfile(ctx, "plain")
	if err != nil {
		t.Fatal(err)
	}
	if p.Command != "my-agent" || p.MCP || len(p.Args) != 1 || p.Args[0] != "--acp" || len(p.Env) != 1 || p.Env[0] != "K=V" {
		t.Fatalf("profile after upgrade: %+v", p)
	}
	// Later migrations' tables work on the upgraded data.
	if err := db.InsertSession(ctx, Session{ID: "s1", TaskID: "root22", Role: "worker", Profile: "claude",
		State: "running", CreatedAt: i2Time, UpdatedAt: i2Time}); err != nil {
		t.Fatalf("sessions after upgrade: %v", err)
	}
	if _, err := db.Enqueue(ctx, QueueItem{TaskID: "kid222", Priority: 1, Kind: "message", Sender: "x", Text: "hi", CreatedAt: i2Time}); err != nil {
		t.Fatalf("queue after upgrade: %v", err)
	}
	v, err := db.TaskView(ctx, "root22")
	if err != nil || v.Session == nil || v.Session.ID != "s1" {
		t.Fatalf("view after upgrade: %+v, %v", v, err)
	}
	// The version-1 triggers still hold.
	if err := db.SetTaskAutopilot(ctx, "root22", false); !errors.Is(err, ErrConstraint) {
		t.Fatalf("autopilot change after upgrade: %v", err)
	}
}

// Each intermediate version upgrades to the newest.
func TestUpgradeFromEveryVersion(t *testing.T) {
	ctx := context.Background()
	for v := 0; v < SchemaVersion(); v++ {
		t.Run(fmt.Sprintf("from%d", v), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kandev.db")
			old := openUnmigrated(t, path)
			if v > 0 {
				if err := old.MigrateTo(ctx, v); err != nil {
					t.Fatal(err)
				}
			}
			if got := userVersion(t, old); got != v {
				t.Fatalf("user_version %d, want %d", got, v)
			}
			old.Close()
			db, err := Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if got := userVersion(t, db); got != SchemaVersion() {
				t.Fatalf("user_version %d", got)
			}
			mustInsert(t, db, i2Task("after2", ""))
		})
	}
}

func TestDatabaseNewerThanBinaryIsRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kandev.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	mustInsert(t, db, i2Task("keep22", ""))
	newer := SchemaVersion() + 1
	if _, err := db.sql.Exec(fmt.Sprintf("PRAGMA user_version = %d", newer)); err != nil {
		t.Fatal(err)
	}
	db.Close()

	_, err = Open(ctx, path)
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("opening a newer database: %v, want ErrSchemaTooNew", err)
	}
	msg := err.Error()
	for _, want := range []string{path, fmt.Sprintf("schema version %d", newer), fmt.Sprint(SchemaVersion()), "upgrade kandev"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	// Nothing was touched: the version and the rows are as they were.
	raw := openUnmigrated(t, path)
	defer raw.Close()
	if got := userVersion(t, raw); got != newer {
		t.Fatalf("user_version became %d", got)
	}
	if _, err := raw.GetTask(ctx, "keep22"); err != nil {
		t.Fatal(err)
	}
}

// Several first opens at once all end at the newest schema: each migration
// step reads the version inside the transaction that applies it.
func TestConcurrentOpensMigrateOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kandev.db")
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := Open(context.Background(), path)
			if err == nil {
				db.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("open %d: %v", i, err)
		}
	}
}
