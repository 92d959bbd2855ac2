package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// A session ended before sessions carried the interrupted flag is
// classified once, by the migration that adds it, by the old rule: its
// reason begins with the daemon-exit prefix. Rows written that way are
// read with the flag; others are not.
func TestInterruptedFlagOfOldSessions(t *testing.T) {
	ctx := context.Background()
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	added := 0
	for _, m := range ms {
		if strings.HasSuffix(m.name, "_session_interrupted.sql") {
			added = m.version
		}
	}
	if added == 0 {
		t.Fatal("no migration adds the interrupted flag")
	}
	path := filepath.Join(t.TempDir(), "kandev.db")
	old := openUnmigrated(t, path)
	if err := old.MigrateTo(ctx, added-1); err != nil {
		t.Fatal(err)
	}
	// Rows as the binary before the flag wrote them: its own column list.
	for _, q := range []string{
		`INSERT INTO tasks (id, title, description, parent_id, cwd, profile, status, autopilot, created_by, created_at, updated_at)
			VALUES ('k1task', 'old', '', NULL, '/src', 'mock', 'in_progress', 0, 'person:operator', 100, 200)`,
		`INSERT INTO sessions (id, task_id, role, profile, state, agent_session_id, pid, error, turns, turn_started_at, created_at, updated_at)
			VALUES ('s-cut', 'k1task', 'mock', 'mock', 'cancelled', '', 0, 'interrupted: the kandev daemon exited while this session was running', 1, 0, 100, 200)`,
		`INSERT INTO sessions (id, task_id, role, profile, state, agent_session_id, pid, error, turns, turn_started_at, created_at, updated_at)
			VALUES ('s-shut', 'k1task', 'mock', 'mock', 'cancelled', '', 0, 'interrupted: the kandev daemon shut down', 1, 0, 100, 200)`,
		`INSERT INTO sessions (id, task_id, role, profile, state, agent_session_id, pid, error, turns, turn_started_at, created_at, updated_at)
			VALUES ('s-stop', 'k1task', 'mock', 'mock', 'cancelled', '', 0, 'stopped by the operator', 1, 0, 100, 200)`,
		`INSERT INTO sessions (id, task_id, role, profile, state, agent_session_id, pid, error, turns, turn_started_at, created_at, updated_at)
			VALUES ('s-said', 'k1task', 'mock', 'mock', 'failed', '', 0, 'exit status 1: Interrupted: the kandev daemon', 1, 0, 100, 200)`,
		`UPDATE tasks SET session_id = 's-cut' WHERE id = 'k1task'`,
	} {
		if _, err := old.sql.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for id, want := range map[string]bool{"s-cut": true, "s-shut": true, "s-stop": false, "s-said": false} {
		s, err := db.GetSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if s.Interrupted != want {
			t.Errorf("session %s (%q): interrupted %v, want %v", id, s.Error, s.Interrupted, want)
		}
	}
	// As written now: the flag is set by the update that ends the session,
	// and a later update without it leaves it set.
	reason := "anything at all"
	if err := db.UpdateSession(ctx, "s-stop", SessionUpdate{Error: &reason, Interrupted: true}, i2Time); err != nil {
		t.Fatal(err)
	}
	if err := db.UpdateSession(ctx, "s-stop", SessionUpdate{Error: &reason}, i2Time); err != nil {
		t.Fatal(err)
	}
	if s, err := db.GetSession(ctx, "s-stop"); err != nil || !s.Interrupted {
		t.Fatalf("after the update: %+v, %v", s, err)
	}
	// Both ways a view reads the latest session carry the flag.
	for _, ids := range [][]string{nil, {"k1task"}} {
		views, err := db.TaskViews(ctx, ids)
		if err != nil || len(views) != 1 || views[0].Session == nil || !views[0].Session.Interrupted {
			t.Fatalf("views of %v: %+v, %v", ids, views, err)
		}
	}
}
