package store

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestTaskRoundTrip(t *testing.T) {
	db := openFreshDB(t)
	ctx := context.Background()
	in := Task{ID: "k3f9qa", Title: "Split the auth module", Description: "keep the API\nsecond line",
		CWD: "/src/app", Profile: "claude", Status: "review", Autopilot: true, CreatedBy: "person:operator",
		CreatedAt: i2Time, UpdatedAt: i2Time.Add(time.Second), TitlePending: true}
	mustInsert(t, db, in)
	got, err := db.GetTask(ctx, "k3f9qa")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != in.ID || got.Title != in.Title || got.Description != in.Description || got.ParentID != "" ||
		got.CWD != in.CWD || got.Profile != in.Profile || got.Status != in.Status || !got.Autopilot ||
		got.CreatedBy != in.CreatedBy || !got.TitlePending || got.Halted || got.SessionID != "" || got.Archived() {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, in)
	}
	if !got.CreatedAt.Equal(in.CreatedAt) || !got.UpdatedAt.Equal(in.UpdatedAt) {
		t.Fatalf("timestamps lost precision: %v %v", got.CreatedAt, got.UpdatedAt)
	}
	if got.CreatedAt.Location() != time.UTC {
		t.Fatalf("timestamps come back in %v, want UTC", got.CreatedAt.Location())
	}
	if !got.ArchivedAt.IsZero() {
		t.Fatalf("archived_at %v for a live task", got.ArchivedAt)
	}
}

// Autopilot and parent are fixed at creation by the schema itself, for
// every write path: the typed queries and raw SQL.
func TestAutopilotAndParentTriggers(t *testing.T) {
	db := openFreshDB(t)
	ctx := context.Background()
	auto := i2Task("auto22", "")
	auto.Autopilot = true
	mustInsert(t, db, auto, i2Task("plain2", ""), i2Task("kid222", "auto22"))

	for _, c := range []struct {
		name string
		err  error
		says string
	}{
		{"SetTaskAutopilot off", db.SetTaskAutopilot(ctx, "auto22", false), "autopilot is fixed at creation"},
		{"SetTaskAutopilot on", db.SetTaskAutopilot(ctx, "plain2", true), "autopilot is fixed at creation"},
		{"SetTaskParent to another", db.SetTaskParent(ctx, "kid222", "plain2"), "parent is fixed at creation"},
		{"SetTaskParent to none", db.SetTaskParent(ctx, "kid222", ""), "parent is fixed at creation"},
		{"SetTaskParent of a root", db.SetTaskParent(ctx, "plain2", "auto22"), "parent is fixed at creation"},
		{"SetTaskParent to itself", db.SetTaskParent(ctx, "plain2", "plain2"), "parent is fixed at creation"},
	} {
		if !errors.Is(c.err, ErrConstraint) || !strings.Contains(c.err.Error(), c.says) {
			t.Errorf("%s: %v, want ErrConstraint saying %q", c.name, c.err, c.says)
		}
	}
	for _, q := range []string{
		`UPDATE tasks SET autopilot = 0 WHERE id = 'auto22'`,
		`UPDATE tasks SET autopilot = 1, title = 'sneaky' WHERE id = 'plain2'`,
		`UPDATE tasks SET autopilot = 1 - autopilot`,
		`UPDATE tasks SET parent_id = NULL WHERE id = 'kid222'`,
		`UPDATE tasks SET parent_id = 'kid222' WHERE id = 'auto22'`, // would close a cycle
		`UPDATE tasks SET title = 'x', parent_id = 'plain2' WHERE id = 'kid222'`,
	} {
		_, err := db.sql.Exec(q)
		if err == nil {
			t.Errorf("raw %q was allowed", q)
			continue
		}
		if !errors.Is(mapErr(err), ErrConstraint) {
			t.Errorf("raw %q: %v does not map to ErrConstraint", q, err)
		}
	}
	// Nothing changed, including the title of the refused multi-column update.
	for id, want := range map[string]Task{"auto22": {Autopilot: true}, "plain2": {}, "kid222": {ParentID: "auto22"}} {
		got, err := db.GetTask(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Autopilot != want.Autopilot || got.ParentID != want.ParentID || got.Title != "task "+id {
			t.Errorf("%s changed: %+v", id, got)
		}
	}
	// Writing the same value is not a change, and other columns stay writable.
	if _, err := db.sql.Exec(`UPDATE tasks SET autopilot = 1, parent_id = NULL, title = 'renamed' WHERE id = 'auto22'`); err != nil {
		t.Fatalf("a no-op write of autopilot/parent was refused: %v", err)
	}
	if err := db.UpdateTaskText(ctx, "auto22", "again", "d", i2Time); err != nil {
		t.Fatal(err)
	}
}

// A parent must exist when the child is written; since the parent can
// never change afterwards, no chain of parents can loop back. The one
// shape the foreign key alone would let through, a task naming itself, is
// refused by a trigger.
func TestParentMustExist(t *testing.T) {
	db := openFreshDB(t)
	ctx := context.Background()
	if err := db.InsertTask(ctx, i2Task("kid222", "nope22")); !errors.Is(err, ErrConstraint) {
		t.Fatalf("child of a missing parent: %v", err)
	}
	if _, err := db.GetTask(ctx, "kid222"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a refused insert left a row: %v", err)
	}
	err := db.InsertTask(ctx, i2Task("self22", "self22"))
	if !errors.Is(err, ErrConstraint) || !strings.Contains(err.Error(), "own parent") {
		t.Fatalf("a task that is its own parent: %v", err)
	}
}

func TestListTasksOrderFiltersAndSubtree(t *testing.T) {
	db := openFreshDB(t)
	ctx := context.Background()
	// Creation order decides, then id for equal timestamps.
	same := i2Time.Add(time.Hour)
	mk := func(id, parent string, at time.Time) Task {
		tk := i2Task(id, parent)
		tk.CreatedAt, tk.UpdatedAt = at, at
		return tk
	}
	mustInsert(t, db,
		mk("root2b", "", same),
		mk("root2a", "", same),
		mk("kid2aa", "root2a", same.Add(time.Second)),
		mk("grand2", "kid2aa", same.Add(2*time.Second)),
		mk("kid2bb", "root2b", same.Add(3*time.Second)),
		mk("early2", "", i2Time),
	)
	if err := db.ArchiveTask(ctx, "kid2aa", i2Time); err != nil {
		t.Fatal(err)
	}
	ids := func(f TaskFilter) []string {
		ts, err := db.ListTasks(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tk := range ts {
			out = append(out, tk.ID)
		}
		return out
	}
	if got, want := ids(TaskFilter{}), []string{"early2", "root2a", "root2b", "grand2", "kid2bb"}; !slices.Equal(got, want) {
		t.Errorf("list: %v, want %v", got, want)
	}
	if got, want := ids(TaskFilter{IncludeArchived: true}), []string{"early2", "root2a", "root2b", "kid2aa", "grand2", "kid2bb"}; !slices.Equal(got, want) {
		t.Errorf("list --all: %v, want %v", got, want)
	}
	if got, want := ids(TaskFilter{Root: "root2a", IncludeArchived: true}), []string{"root2a", "kid2aa", "grand2"}; !slices.Equal(got, want) {
		t.Errorf("subtree: %v, want %v", got, want)
	}
	if got, want := ids(TaskFilter{Root: "root2a"}), []string{"root2a", "grand2"}; !slices.Equal(got, want) {
		t.Errorf("subtree without archived: %v, want %v", got, want)
	}
	kids, err := db.Children(ctx, "root2a")
	if err != nil || len(kids) != 1 || kids[0].ID != "kid2aa" {
		t.Errorf("children of root2a (archived included): %v %v", kids, err)
	}
	if n, _ := db.CountTasks(ctx); n != 6 {
		t.Errorf("CountTasks = %d", n)
	}
}

func TestArchiveKeepsTheFirstTime(t *testing.T) {
	db := openFreshDB(t)
	ctx := context.Background()
	mustInsert(t, db, i2Task("arch22", ""))
	first := i2Time.Add(time.Hour)
	if err := db.ArchiveTask(ctx, "arch22", first); err != nil {
		t.Fatal(err)
	}
	if err := db.ArchiveTask(ctx, "arch22", first.Add(time.Hour)); err != nil {
		t.Fatalf("second archive: %v", err)
	}
	got, err := db.GetTask(ctx, "arch22")
	if err != nil {
		t.Fatal(err)
	}
	if !got.Archived() || !got.ArchivedAt.Equal(first) {
		t.Fatalf("archived_at %v, want the first archive time %v", got.ArchivedAt, first)
	}
}

func TestTaskIDsWithPrefix(t *testing.T) {
	db := openFreshDB(t)
	ctx := context.Background()
	mustInsert(t, db, i2Task("ab2345", ""), i2Task("ab2399", ""), i2Task("ac2345", ""), i2Task("b22345", ""))
	for _, c := range []struct {
		prefix string
		limit  int
		want   []string
	}{
		{"ab", 10, []string{"ab2345", "ab2399"}},
		{"ab23", 10, []string{"ab2345", "ab2399"}},
		{"ab234", 10, []string{"ab2345"}},
		{"a", 10, []string{"ab2345", "ab2399", "ac2345"}},
		{"a", 2, []string{"ab2345", "ab2399"}},
		{"zz", 10, nil},
		{"ab2345", 10, []string{"ab2345"}},
	} {
		got, err := db.TaskIDsWithPrefix(ctx, c.prefix, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("prefix %q limit %d: %v, want %v", c.prefix, c.limit, got, c.want)
		}
	}
}

func TestTaskUpdates(t *testing.T) {
	db := openFreshDB(t)
	ctx := context.Background()
	mustInsert(t, db, i2Task("upd222", ""))
	later := i2Time.Add(time.Hour)
	if err := db.UpdateTaskText(ctx, "upd222", "new title", "new desc", later); err != nil {
		t.Fatal(err)
	}
	if err := db.SetTaskStatus(ctx, "upd222", "in_progress", later); err != nil {
		t.Fatal(err)
	}
	if err := db.SetTaskHalted(ctx, "upd222", true, later); err != nil {
		t.Fatal(err)
	}
	got, _ := db.GetTask(ctx, "upd222")
	if got.Title != "new title" || got.Description != "new desc" || got.Status != "in_progress" || !got.Halted ||
		!got.UpdatedAt.Equal(later) {
		t.Fatalf("after updates: %+v", got)
	}
	if err := db.SetTaskTitle(ctx, "upd222", "agent title", later); err != nil {
		t.Fatal(err)
	}
	got, _ = db.GetTask(ctx, "upd222")
	if got.Title != "agent title" || got.TitlePending {
		t.Fatalf("after SetTaskTitle: %+v", got)
	}
}
